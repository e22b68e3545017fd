package kafka

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TopicInfo is one dead-letter or retry topic as `dlqctl queues` lists it.
type TopicInfo struct {
	Name  string `json:"name"`
	Stage string `json:"stage"` // retry-N, retry, dlt
	// FoundBy says how the topic was recognised: its name (the chain
	// patterns) or the dead-letter headers of its records.
	FoundBy    string          `json:"found_by"`
	Group      string          `json:"group"`
	Partitions []PartitionInfo `json:"partitions"`
	// Pending is the sum over partitions of end − committed (less records
	// handled past a pending one): an upper bound, transaction markers
	// take offsets too.
	Pending int64 `json:"pending"`
	// OldestPendingAge is the age of the oldest first pending record of a
	// partition, in seconds (0 when nothing is pending).
	OldestPendingAge int64    `json:"oldest_pending_age_seconds"`
	RetentionMS      int64    `json:"retention_ms"` // -1: unlimited
	CleanupPolicy    string   `json:"cleanup_policy"`
	Sources          []string `json:"sources"` // original topics named by the sampled headers
}

// PartitionInfo is one partition's depth for dlqctl's group.
type PartitionInfo struct {
	Partition int32 `json:"partition"`
	End       int64 `json:"end"`
	Committed int64 `json:"committed"` // -1: nothing committed
	Pending   int64 `json:"pending"`
}

// ListTopics finds the dead-letter and retry topics of the cluster whose
// names start with prefix: by name (BASE-retry[-N], BASE-dlt, BASE-dlq,
// BASE.DLT) and by the headers of their newest record (any recoverer's
// original-topic header). group(topic) names dlqctl's group on each.
func ListTopics(ctx context.Context, addr Address, conn Conn, prefix string, group func(string) string) ([]TopicInfo, error) {
	cl, err := NewClient(addr, conn)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	all, err := adm.ListTopics(ctx)
	if err != nil {
		if x := explain(addr, conn, err); x != nil {
			return nil, x
		}
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	all.FilterInternal()
	var out []TopicInfo
	for _, name := range all.Names() {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		stage, _ := Stage(name)
		ti, sources, err := inspectTopic(ctx, adm, addr, conn, name, group(name))
		if err != nil {
			return nil, err
		}
		if stage == "" {
			if len(sources) == 0 {
				continue
			}
			ti.Stage, ti.FoundBy = "dlt", "headers"
		}
		for s := range sources {
			ti.Sources = append(ti.Sources, s)
		}
		sort.Strings(ti.Sources)
		out = append(out, ti)
	}
	names := make([]string, 0, len(out))
	for _, t := range out {
		names = append(names, t.Name)
	}
	if len(names) > 0 {
		facts, err := describe(ctx, adm, all, names)
		if err != nil {
			return nil, err
		}
		for i := range out {
			f := facts[out[i].Name]
			out[i].RetentionMS = -1
			if r := retention(f.configs); r >= 0 {
				out[i].RetentionMS = r.Milliseconds()
			}
			out[i].CleanupPolicy = f.configs["cleanup.policy"]
			if out[i].CleanupPolicy == "" {
				out[i].CleanupPolicy = "delete"
			}
		}
	}
	return out, nil
}

// inspectTopic reads one topic's depth for group: per partition end,
// committed and pending, the oldest pending record's age (the first
// pending record of each partition), and the source topics the headers of
// its newest and first pending records name.
func inspectTopic(ctx context.Context, adm *kadm.Client, addr Address, conn Conn, name, group string) (TopicInfo, map[string]bool, error) {
	stage, _ := Stage(name)
	ti := TopicInfo{Name: name, Stage: stage, FoundBy: "name", Group: group, Sources: []string{}}
	plan, err := MakePlan(ctx, adm, name, ti.Group)
	if err != nil {
		return ti, nil, err
	}
	// Headers: the newest record of every partition, and the first
	// pending one (its age is the oldest pending record's).
	sources := map[string]bool{}
	now := time.Now()
	for _, pr := range plan.Partitions {
		ti.Partitions = append(ti.Partitions, PartitionInfo{Partition: pr.Partition, End: pr.End, Committed: pr.Committed, Pending: pr.Pending()})
		ti.Pending += pr.Pending()
		for _, at := range []int64{pr.End - 1, pr.Start} {
			if at < pr.LogStart || at >= pr.End {
				continue
			}
			one := &Plan{Topic: name, TopicID: plan.TopicID, Partitions: []PartitionRange{{Partition: pr.Partition, Start: at, End: at + 1}}}
			_, _ = Peek(ctx, addr.WithTopic(name), conn, one, PeekOptions{Limit: 1, Idle: 2 * time.Second}, func(m *Message) error {
				if m.Origin.Topic != "" {
					sources[m.Origin.Topic] = true
				}
				if at == pr.Start && pr.Pending() > 0 && !m.Timestamp.IsZero() {
					if age := int64(now.Sub(m.Timestamp) / time.Second); age > ti.OldestPendingAge {
						ti.OldestPendingAge = age
					}
				}
				return nil
			})
		}
	}
	return ti, sources, nil
}

// Info is the topic's depth for dlqctl's group (queues, check).
func (e *Endpoint) Info(ctx context.Context) (TopicInfo, error) {
	adm, err := e.Admin()
	if err != nil {
		return TopicInfo{}, err
	}
	ti, _, err := inspectTopic(ctx, adm, e.addr, e.conn, e.addr.Topic, e.group)
	return ti, e.wrap(err)
}

// TopicNames lists the cluster's topics, internal ones left out, over ep's
// connection (TLS, SASL, MSK IAM): what shell completion offers.
func TopicNames(ctx context.Context, ep *Endpoint) ([]string, error) {
	cl, err := NewClient(ep.Address(), ep.Conn())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	tds, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	tds.FilterInternal()
	return tds.Names(), nil
}
