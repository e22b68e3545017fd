package sqs

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

var _ broker.DLQLister = (*Client)(nil)

// DLQInfo is one row of `dlqctl queues` (and its JSON).
type DLQInfo struct {
	Name             string       `json:"name"`
	URL              string       `json:"url"`
	ARN              string       `json:"arn"`
	FIFO             bool         `json:"fifo"`
	Counts           Counts       `json:"counts"`
	RetentionSeconds int          `json:"retention_seconds"`
	Sources          []SourceInfo `json:"sources"`
	HasRedrivePolicy bool         `json:"has_redrive_policy"`
	Warnings         []string     `json:"warnings"`
}

// SourceInfo is a source queue of a DLQ.
type SourceInfo struct {
	Name             string `json:"name"`
	URL              string `json:"url"`
	ARN              string `json:"arn"`
	MaxReceiveCount  int    `json:"max_receive_count"`
	RetentionSeconds int    `json:"retention_seconds"`
}

// ListDLQInfos finds every DLQ of the region (optionally by name prefix)
// with its sources: every queue some queue's RedrivePolicy targets. dur
// writes durations in the warnings.
func (c *Client) ListDLQInfos(ctx context.Context, prefix string, dur func(time.Duration) string) ([]DLQInfo, error) {
	urls, err := c.ListQueueURLs(ctx, "")
	if err != nil {
		return nil, err
	}
	queues, err := c.LoadAll(ctx, urls)
	if err != nil {
		return nil, err
	}
	byARN := map[string]*Queue{}
	for _, q := range queues {
		byARN[q.ARN] = q
	}
	dlqs := map[string]*DLQInfo{}
	for _, q := range queues {
		rp := q.RedrivePolicy()
		if rp == nil {
			continue
		}
		d, ok := byARN[rp.DeadLetterTargetARN]
		if !ok {
			continue // a policy pointing at a missing queue is an audit finding
		}
		info := dlqs[d.ARN]
		if info == nil {
			info = &DLQInfo{Name: d.Name, URL: d.URL, ARN: d.ARN, FIFO: d.FIFO, Counts: d.Counts(),
				RetentionSeconds: int(d.Retention() / time.Second), HasRedrivePolicy: d.RedrivePolicy() != nil,
				Sources: []SourceInfo{}, Warnings: []string{}}
			dlqs[d.ARN] = info
		}
		info.Sources = append(info.Sources, SourceInfo{Name: q.Name, URL: q.URL, ARN: q.ARN,
			MaxReceiveCount: rp.MaxReceiveCount, RetentionSeconds: int(q.Retention() / time.Second)})
	}
	out := make([]DLQInfo, 0, len(dlqs))
	for _, d := range dlqs {
		if prefix != "" && !strings.HasPrefix(d.Name, prefix) {
			continue
		}
		sort.Slice(d.Sources, func(i, j int) bool { return d.Sources[i].Name < d.Sources[j].Name })
		for _, s := range d.Sources {
			if !d.FIFO && d.RetentionSeconds < s.RetentionSeconds {
				d.Warnings = append(d.Warnings, fmt.Sprintf("retention %s is shorter than source %s's %s: dead-lettered messages keep their original enqueue time and expire early",
					dur(time.Duration(d.RetentionSeconds)*time.Second), s.Name, dur(time.Duration(s.RetentionSeconds)*time.Second)))
			}
		}
		if d.HasRedrivePolicy {
			d.Warnings = append(d.Warnings, "the DLQ itself has a RedrivePolicy: every receive while triaging counts toward moving its messages on")
		}
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ListDLQs lists the region's dead-letter queues for `dlqctl queues`.
func (c *Client) ListDLQs(ctx context.Context, opt broker.ListOptions) (broker.DLQListing, error) {
	dlqs, err := c.ListDLQInfos(ctx, opt.Prefix, opt.Duration)
	if err != nil {
		return broker.DLQListing{}, err
	}
	named := ""
	if opt.Prefix != "" {
		named = " targeting a queue named " + opt.Prefix + "*"
	}
	res := broker.DLQListing{Items: broker.Items(dlqs),
		None:    "no dead-letter queues found (no queue has a RedrivePolicy" + named + ")",
		Columns: []string{"DLQ", "VISIBLE", "IN-FLIGHT", "DELAYED", "RETENTION", "SOURCES (maxReceiveCount, retention)"}}
	for _, d := range dlqs {
		srcs := make([]string, len(d.Sources))
		for i, s := range d.Sources {
			srcs[i] = fmt.Sprintf("%s (%d, %s)", s.Name, s.MaxReceiveCount, opt.Duration(time.Duration(s.RetentionSeconds)*time.Second))
		}
		res.Rows = append(res.Rows, []string{d.Name, fmt.Sprint(d.Counts.Visible), fmt.Sprint(d.Counts.InFlight), fmt.Sprint(d.Counts.Delayed),
			opt.Duration(time.Duration(d.RetentionSeconds) * time.Second), strings.Join(srcs, ", ")})
	}
	for _, d := range dlqs {
		for _, w := range d.Warnings {
			res.Warnings = append(res.Warnings, d.Name+": "+w)
		}
	}
	return res, nil
}
