package amqp

import "github.com/dlqctl/dlqctl/pkg/finding"

// AuditRules are the checks of the RabbitMQ audit, as 'dlqctl audit --help'
// lists them; a test holds them to the code.
var AuditRules = []finding.Rule{
	{Severity: finding.SevError, Check: CheckDLXMissing, Summary: "the dead-letter exchange does not exist"},
	{Severity: finding.SevError, Check: CheckDLXUnrouted, Summary: "the DLX routes the dead letters to no queue"},
	{Severity: finding.SevError, Check: CheckQuorumLimitNoDLX, Summary: "quorum delivery limit, no DLX: dropped"},
	{Severity: finding.SevError, Check: CheckQuorumDefaultLimit, Summary: "4.x quorum queue without a DLX (limit 20)"},
	{Severity: finding.SevError, Check: CheckDropWithoutDLX, Summary: "expired/overflowing messages are deleted"},
	{Severity: finding.SevWarn, Check: CheckNoDLX, Summary: "a rejected message is deleted"},
	{Severity: finding.SevWarn, Check: CheckDLQUnbounded, Summary: "a DLQ without a length limit"},
	{Severity: finding.SevWarn, Check: CheckDLQDrops, Summary: "a DLQ with a TTL and no DLX of its own"},
	{Severity: finding.SevWarn, Check: CheckCycleWithoutTTL, Summary: "a retry loop without a delay"},
	{Severity: finding.SevWarn, Check: CheckAtLeastOnceIneffect, Summary: "at-least-once set but not in effect"},
	{Severity: finding.SevInfo, Check: CheckAtMostOnce, Summary: "quorum source dead-letters at most once"},
}
