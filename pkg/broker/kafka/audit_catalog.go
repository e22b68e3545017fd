package kafka

import "github.com/dlqctl/dlqctl/pkg/finding"

// AuditRules are the checks of the Kafka audit (Audit), as 'dlqctl audit
// --help' lists them; a test holds them to the code.
var AuditRules = []finding.Rule{
	{finding.SevError, "kafka-dlt-compacted", "cleanup.policy compact: dead letters of one key overwrite each other"},
	{finding.SevError, "kafka-dlt-fewer-partitions", "fewer partitions than a source whose recoverer keeps the partition number"},
	{finding.SevWarn, "kafka-dlt-replication", "replication factor 1"},
	{finding.SevWarn, "kafka-dlt-min-insync", "min.insync.replicas=1 with more replicas"},
	{finding.SevWarn, "kafka-dlt-retention-short", "retention.ms below the source's plus the investigation window"},
	{finding.SevWarn, "kafka-retry-without-dlt", "retry topics with no dead-letter topic"},
}
