package amqp

import "github.com/dlqctl/dlqctl/pkg/finding"

// AuditRules are the checks of the RabbitMQ audit, as 'dlqctl audit --help'
// lists them; a test holds them to the code.
var AuditRules = []finding.Rule{
	{finding.SevError, CheckDLXMissing, "the dead-letter exchange does not exist"},
	{finding.SevError, CheckDLXUnrouted, "the DLX routes the dead letters to no queue"},
	{finding.SevError, CheckQuorumLimitNoDLX, "quorum delivery limit, no DLX: dropped"},
	{finding.SevError, CheckQuorumDefaultLimit, "4.x quorum queue without a DLX (limit 20)"},
	{finding.SevError, CheckDropWithoutDLX, "expired/overflowing messages are deleted"},
	{finding.SevWarn, CheckNoDLX, "a rejected message is deleted"},
	{finding.SevWarn, CheckDLQUnbounded, "a DLQ without a length limit"},
	{finding.SevWarn, CheckDLQDrops, "a DLQ with a TTL and no DLX of its own"},
	{finding.SevWarn, CheckCycleWithoutTTL, "a retry loop without a delay"},
	{finding.SevWarn, CheckAtLeastOnceIneffect, "at-least-once set but not in effect"},
	{finding.SevInfo, CheckAtMostOnce, "quorum source dead-letters at most once"},
}
