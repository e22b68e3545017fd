package kafka

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/pkg/finding"
)

// AuditOptions tune an audit.
type AuditOptions struct {
	// InvestigationWindow is how long people need between a record
	// dead-lettering and someone replaying it (audit's
	// --investigation-window).
	InvestigationWindow time.Duration
	// Sample is how many records of the DLT are read to learn its sources
	// and recoverer (0: 200).
	Sample int
}

type topicFacts struct {
	name       string
	partitions int
	rf         int
	configs    map[string]string
}

// Audit checks the dead-letter topic of ep (and its retry chain) against
// the rules in docs/kafka.md. It reads configuration and a sample of
// records; it changes nothing.
func Audit(ctx context.Context, ep *Endpoint, opt AuditOptions) ([]finding.Finding, []string, error) {
	adm, err := ep.Admin()
	if err != nil {
		return nil, nil, err
	}
	if opt.Sample <= 0 {
		opt.Sample = 200
	}
	all, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, nil, ep.wrap(err)
	}
	dlt := ep.Name()
	if !all.Has(dlt) {
		return nil, nil, ep.wrap(fmt.Errorf("%w: %s", ErrTopicNotFound, dlt))
	}
	stage, base := Stage(dlt)
	var notes []string
	var chain []string
	hasDLT := stage == "dlt"
	for _, n := range all.Names() {
		if st, b := Stage(n); st != "" && b == base {
			chain = append(chain, n)
			if st == "dlt" {
				hasDLT = true
			}
		}
	}
	sort.Strings(chain)

	// Sources and recoverers from a sample of the DLT's records.
	plan, err := ep.Plan(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i := range plan.Partitions { // sample from the log start, not the group
		plan.Partitions[i].Start = plan.Partitions[i].LogStart
	}
	plan.Journals = nil
	sources := map[string]bool{}
	formats := map[string]bool{}
	samePartition, seen := 0, 0
	if _, err := Peek(ctx, ep.addr, ep.conn, plan, PeekOptions{Limit: opt.Sample, Idle: 5 * time.Second}, func(m *Message) error {
		seen++
		if m.Origin.Topic != "" {
			sources[m.Origin.Topic] = true
			formats[m.Origin.Format] = true
			if m.Origin.Partition == m.Partition {
				samePartition++
			}
		}
		return nil
	}); err != nil {
		return nil, nil, ep.wrap(err)
	}
	if len(sources) == 0 && stage != "" && all.Has(base) {
		sources[base] = true
	}
	if len(sources) == 0 {
		notes = append(notes, fmt.Sprintf("%s: no record names its source topic and no topic %s exists: the retention and partition checks against the source were skipped", dlt, base))
	}
	names := []string{dlt}
	for s := range sources {
		if all.Has(s) {
			names = append(names, s)
		} else {
			notes = append(notes, fmt.Sprintf("%s: records name source topic %s, which does not exist on this cluster", dlt, s))
			delete(sources, s)
		}
	}
	facts, err := describe(ctx, adm, all, names)
	if err != nil {
		return nil, nil, ep.wrap(err)
	}
	d := facts[dlt]
	var out []finding.Finding
	add := func(f finding.Finding) {
		f.Fix.Queue = f.Queue
		out = append(out, f)
	}

	if strings.Contains(d.configs["cleanup.policy"], "compact") {
		add(finding.Finding{Severity: finding.SevError, Check: "kafka-dlt-compacted", Queue: dlt,
			Problem: fmt.Sprintf("cleanup.policy is %q", d.configs["cleanup.policy"]),
			Why:     "compaction keeps only the newest record per key: dead letters of the same key (the same order, the same customer) are silently lost",
			Fix: finding.Fix{Text: "set cleanup.policy=delete on the dead-letter topic",
				Command: fmt.Sprintf("kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config cleanup.policy=delete", dlt)}})
	}
	if d.rf == 1 {
		add(finding.Finding{Severity: finding.SevWarn, Check: "kafka-dlt-replication", Queue: dlt,
			Problem: "replication factor 1",
			Why:     "the only copy of every dead letter lives on one broker: losing its disk loses the records nobody has looked at yet",
			Fix:     finding.Fix{Text: "reassign the topic's partitions to 3 replicas (kafka-reassign-partitions.sh) and set min.insync.replicas=2"}})
	} else if v := d.configs["min.insync.replicas"]; v == "1" {
		add(finding.Finding{Severity: finding.SevWarn, Check: "kafka-dlt-min-insync", Queue: dlt,
			Problem: fmt.Sprintf("min.insync.replicas=1 with replication factor %d", d.rf),
			Why:     "a recoverer producing with acks=all is acknowledged by a single replica: a dead letter can be lost with that broker",
			Fix: finding.Fix{Text: "set min.insync.replicas=2",
				Command: fmt.Sprintf("kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config min.insync.replicas=2", dlt)}})
	}
	dltRet := retention(d.configs)
	for src := range sources {
		s := facts[src]
		srcRet := retention(s.configs)
		if dltRet >= 0 && (srcRet < 0 || dltRet < srcRet+opt.InvestigationWindow) {
			want := "-1 (unlimited)"
			if srcRet >= 0 {
				want = strconv.FormatInt((srcRet + opt.InvestigationWindow).Milliseconds(), 10)
			}
			add(finding.Finding{Severity: finding.SevWarn, Check: "kafka-dlt-retention-short", Queue: dlt, Related: src,
				Problem: fmt.Sprintf("retention.ms %s is shorter than the source's (%s) plus the investigation window (%s)", fmtRetention(dltRet), fmtRetention(srcRet), fmtRetention(opt.InvestigationWindow)),
				Why:     "dead letters are deleted by retention before anyone replays them; a record that waited in retry topics is older still",
				Fix: finding.Fix{Text: "raise retention.ms of the dead-letter topic to at least " + want,
					Command: fmt.Sprintf("kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config retention.ms=%s", dlt, strings.Fields(want)[0])}})
		}
		keepsPartition := formats["spring-kafka"] || (seen > 0 && samePartition == seen)
		if d.partitions < s.partitions && keepsPartition {
			add(finding.Finding{Severity: finding.SevError, Check: "kafka-dlt-fewer-partitions", Queue: dlt, Related: src, Sampled: true,
				Problem: fmt.Sprintf("%d partitions, its source %s has %d, and its recoverer keeps the partition number", d.partitions, src, s.partitions),
				Why:     "Spring's DeadLetterPublishingRecoverer publishes to the same partition number by default: records from source partitions the DLT does not have fail to dead-letter (and the listener retries them forever or drops them)",
				Fix: finding.Fix{Text: fmt.Sprintf("add partitions to the dead-letter topic (at least %d), or give the recoverer a destination resolver that lets the partitioner choose", s.partitions),
					Command: fmt.Sprintf("kafka-topics.sh --alter --topic %s --partitions %d", dlt, s.partitions)}})
		}
	}
	if !hasDLT && len(chain) > 0 {
		add(retryWithoutDLT(dlt, chain, base))
	}
	return out, notes, nil
}

// retryWithoutDLT is the finding on a retry chain (base's retry topics,
// sorted) that has no dead-letter topic; queue is the topic it is about.
func retryWithoutDLT(queue string, chain []string, base string) finding.Finding {
	return finding.Finding{Severity: finding.SevWarn, Check: "kafka-retry-without-dlt", Queue: queue,
		Problem: fmt.Sprintf("retry topics %s have no dead-letter topic (%s-dlt or %s-dlq)", strings.Join(chain, ", "), base, base),
		Why:     "a record that fails its last retry has nowhere to go: it is dropped, or blocks the last retry topic's consumer",
		Fix:     finding.Fix{Text: fmt.Sprintf("create %s-dlt and configure the last retry consumer's recoverer to publish to it", base), Queue: queue}}
}

func describe(ctx context.Context, adm *kadm.Client, all kadm.TopicDetails, names []string) (map[string]topicFacts, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := map[string]topicFacts{}
	for _, n := range names {
		td := all[n]
		f := topicFacts{name: n, partitions: len(td.Partitions), configs: map[string]string{}}
		for _, p := range td.Partitions {
			f.rf = max(f.rf, len(p.Replicas))
		}
		rc, err := rcs.On(n, nil)
		if err == nil && rc.Err == nil {
			for _, c := range rc.Configs {
				if c.Value != nil {
					f.configs[c.Key] = *c.Value
				}
			}
		}
		out[n] = f
	}
	return out, nil
}

// retention is retention.ms as a duration (-1: unlimited).
func retention(cfg map[string]string) time.Duration {
	v, ok := cfg["retention.ms"]
	if !ok {
		return 7 * 24 * time.Hour // Kafka's default log.retention.hours=168
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

func fmtRetention(d time.Duration) string {
	if d < 0 {
		return "unlimited"
	}
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
