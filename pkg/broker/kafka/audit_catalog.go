package kafka

import "github.com/dlqctl/dlqctl/pkg/finding"

// AuditRules are the checks of the Kafka audit (Audit), as 'dlqctl audit
// --help' lists them; a test holds them to the code.
var AuditRules = []finding.Rule{
	{Severity: finding.SevError, Check: "kafka-dlt-compacted", Summary: "cleanup.policy compact: dead letters of one key overwrite each other"},
	{Severity: finding.SevError, Check: "kafka-dlt-fewer-partitions", Summary: "fewer partitions than a source whose recoverer keeps the partition number"},
	{Severity: finding.SevWarn, Check: "kafka-dlt-replication", Summary: "replication factor 1"},
	{Severity: finding.SevWarn, Check: "kafka-dlt-min-insync", Summary: "min.insync.replicas=1 with more replicas"},
	{Severity: finding.SevWarn, Check: "kafka-dlt-retention-short", Summary: "retention.ms below the source's plus the investigation window"},
	{Severity: finding.SevWarn, Check: "kafka-retry-without-dlt", Summary: "retry topics with no dead-letter topic"},
}
