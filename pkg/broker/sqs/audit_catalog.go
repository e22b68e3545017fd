package sqs

import fnd "github.com/dlqctl/dlqctl/pkg/finding"

// AuditRules are the checks of the SQS audit (Auditor), as 'dlqctl audit
// --help' lists them; a test holds them to the code.
var AuditRules = []fnd.Rule{
	{Severity: fnd.SevError, Check: "no-redrive-policy", Summary: "a source queue without a RedrivePolicy"},
	{Severity: fnd.SevError, Check: "dlq-missing", Summary: "RedrivePolicy points at a queue that does not exist"},
	{Severity: fnd.SevError, Check: "dlq-other-region", Summary: "RedrivePolicy points at another account or region"},
	{Severity: fnd.SevError, Check: "dlq-self", Summary: "RedrivePolicy points at the queue itself"},
	{Severity: fnd.SevError, Check: "dlq-type-mismatch", Summary: "FIFO source with a standard DLQ, or the reverse"},
	{Severity: fnd.SevError, Check: "redrive-allow-denied", Summary: "the DLQ's RedriveAllowPolicy denies an actual source"},
	{Severity: fnd.SevError, Check: "dlq-retention-short", Summary: "DLQ retention below the source's (warn: below source + investigation window); standard queues keep the original enqueue time"},
	{Severity: fnd.SevError, Check: "messages-expiring", Summary: "sampled DLQ messages expire within 24h"},
	{Severity: fnd.SevWarn, Check: "dlq-retention-capped", Summary: "DLQ at the 14-day maximum and still too short"},
	{Severity: fnd.SevWarn, Check: "max-receive-low", Summary: "maxReceiveCount 1-2: transient blips become DLQ noise"},
	{Severity: fnd.SevWarn, Check: "max-receive-high", Summary: "maxReceiveCount above 10: poison messages burn capacity"},
	{Severity: fnd.SevWarn, Check: "visibility-tiny", Summary: "source visibility timeout below 5s"},
	{Severity: fnd.SevWarn, Check: "visibility-max", Summary: "source visibility timeout at the 12h maximum"},
	{Severity: fnd.SevWarn, Check: "dlq-has-redrive-policy", Summary: "the DLQ itself has a RedrivePolicy"},
	{Severity: fnd.SevWarn, Check: "no-encryption", Summary: "neither SQS-managed SSE nor a KMS key"},
	{Severity: fnd.SevWarn, Check: "orphan-dlq", Summary: "a queue named like a DLQ that nothing targets"},
	{Severity: fnd.SevInfo, Check: "retry-window-short", Summary: "maxReceiveCount x visibility under a minute"},
}
