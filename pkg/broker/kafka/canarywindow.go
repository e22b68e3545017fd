package kafka

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// dltSuffixes are the dead-letter topic suffixes the window knows: Spring
// for Apache Kafka's non-blocking retries ("-dlt", the default), its
// DeadLetterPublishingRecoverer (".DLT"), and the common "-dlq".
var dltSuffixes = []string{"-dlt", ".DLT", "-DLT", ".dlt", "-dlq"}

// retryTopic matches Spring's retry topics named with their delay:
// MAIN-retry-DELAYMS, and MAIN-retry-DELAYMS-I when several attempts share
// a delay (the last, maxDelay reached).
var retryTopic = regexp.MustCompile(`^-retry-(\d+)(?:-(\d+))?$`)

// CanaryWindow is how long a record that always fails needs, at most, to
// come back to this dead-letter topic. Kafka keeps no redelivery setting: a
// consumer decides when a record goes to a dead-letter topic, so the time
// is known only when the topic is fed by Spring's non-blocking retries
// with delay-suffixed retry topics (MAIN-retry-1000, MAIN-retry-2000, …,
// MAIN-dlt; MAIN is the --to topic when dests are given): the sum of
// their delays, + broker.CanaryMargin. Otherwise
// Known is false and Reason says why (the canary needs --verify-for).
func (e *Endpoint) CanaryWindow(ctx context.Context, dests []broker.Destination) (broker.CanaryWindow, error) {
	adm, err := e.Admin()
	if err != nil {
		return broker.CanaryWindow{}, e.wrap(err)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return broker.CanaryWindow{}, e.wrap(err)
	}
	var names []string
	for _, t := range topics.Sorted() {
		names = append(names, t.Topic)
	}
	// The topics the copies go to: --to's, or (back to the source) the
	// main topic the dead-letter topic's name is made from.
	var mains []string
	if dests == nil {
		for _, s := range dltSuffixes {
			if m, ok := strings.CutSuffix(e.addr.Topic, s); ok && m != "" {
				mains = append(mains, m)
			}
		}
	}
	for _, d := range dests {
		if t, ok := d.Target.(string); ok {
			mains = append(mains, t)
		}
	}
	w := broker.CanaryWindow{}
	var unnamed []string // retry topics without a delay in their name
	for _, main := range mains {
		delays, other := springRetryDelays(names, main)
		unnamed = append(unnamed, other...)
		if len(delays) == 0 {
			continue
		}
		var sum time.Duration
		parts := make([]string, 0, len(delays))
		for _, d := range delays {
			sum += d.delay
			parts = append(parts, fmt.Sprintf("%s %s", d.topic, d.delay))
		}
		if need := sum + broker.CanaryMargin; need > w.Need {
			w = broker.CanaryWindow{Known: true, Returns: true, Need: need,
				Reason: fmt.Sprintf("Spring retry topics of %s delay a failing record %s before it reaches %s (%s), + %s", main, sum, e.addr.Topic, strings.Join(parts, ", "), broker.CanaryMargin)}
		}
	}
	if w.Known {
		return w, nil
	}
	w.Reason = fmt.Sprintf("Kafka keeps no redelivery setting (its consumer decides when a record goes to %s), and no Spring retry topic named with its delay (MAIN-retry-DELAYMS) feeds it", e.addr.Topic)
	if len(unnamed) > 0 {
		w.Reason = fmt.Sprintf("Kafka keeps no redelivery setting (its consumer decides when a record goes to %s), and its retry topics (%s) do not carry their delays in their names", e.addr.Topic, strings.Join(unnamed, ", "))
	}
	return w, nil
}

type retryDelay struct {
	topic string
	delay time.Duration
}

// springRetryDelays lists main's delay-named retry topics in names, in
// order of delay, and the retry topics whose names carry an index instead
// (MAIN-retry-0, MAIN-retry-1, … or one MAIN-retry: no delay to read).
func springRetryDelays(names []string, main string) (delays []retryDelay, unnamed []string) {
	var idx []int64
	var idxNames []string
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, main)
		if !ok {
			continue
		}
		if rest == "-retry" {
			unnamed = append(unnamed, n)
			continue
		}
		m := retryTopic.FindStringSubmatch(rest)
		if m == nil {
			continue
		}
		v, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			continue
		}
		if m[2] == "" {
			idx, idxNames = append(idx, v), append(idxNames, n)
		}
		delays = append(delays, retryDelay{topic: n, delay: time.Duration(v) * time.Millisecond})
	}
	// Index-suffixed topics are numbered 0, 1, …, n-1 (Spring's default
	// since 3.0) or 1, …, n (attempt numbers): those numbers are not delays.
	sort.Slice(idx, func(i, k int) bool { return idx[i] < idx[k] })
	indexed := len(idx) > 0 && idx[0] <= 1
	for i, v := range idx {
		if v != idx[0]+int64(i) {
			indexed = false
		}
	}
	if indexed {
		return nil, append(unnamed, idxNames...)
	}
	sort.Slice(delays, func(i, k int) bool { return delays[i].delay < delays[k].delay })
	return delays, unnamed
}

// MarkEnd takes the topic's end offsets (broker.PositionMarker), as the
// run's plan reads them (read_committed: a record of a transaction still
// open then counts as later, the safe side): a record read later at an
// offset below its partition's end was on the topic before the canary
// moved anything.
func (e *Endpoint) MarkEnd(ctx context.Context) (func(*record.Record) bool, error) {
	plan, err := e.Plan(ctx)
	if err != nil {
		return nil, err
	}
	end := make(map[int32]int64, len(plan.Partitions))
	for _, r := range plan.Partitions {
		end[r.Partition] = r.End
	}
	topic := e.addr.Topic
	return func(r *record.Record) bool {
		k := r.System.Kafka
		if k == nil || k.Topic != topic {
			return false
		}
		at, ok := end[k.Partition]
		return ok && k.Offset < at
	}, nil
}
