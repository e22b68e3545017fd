package sqs

import fnd "github.com/dlqctl/dlqctl/pkg/finding"

// AuditRules are the checks of the SQS audit (Auditor), as 'dlqctl audit
// --help' lists them; a test holds them to the code.
var AuditRules = []fnd.Rule{
	{fnd.SevError, "no-redrive-policy", "a source queue without a RedrivePolicy"},
	{fnd.SevError, "dlq-missing", "RedrivePolicy points at a queue that does not exist"},
	{fnd.SevError, "dlq-other-region", "RedrivePolicy points at another account or region"},
	{fnd.SevError, "dlq-self", "RedrivePolicy points at the queue itself"},
	{fnd.SevError, "dlq-type-mismatch", "FIFO source with a standard DLQ, or the reverse"},
	{fnd.SevError, "redrive-allow-denied", "the DLQ's RedriveAllowPolicy denies an actual source"},
	{fnd.SevError, "dlq-retention-short", "DLQ retention below the source's (warn: below source + investigation window); standard queues keep the original enqueue time"},
	{fnd.SevError, "messages-expiring", "sampled DLQ messages expire within 24h"},
	{fnd.SevWarn, "dlq-retention-capped", "DLQ at the 14-day maximum and still too short"},
	{fnd.SevWarn, "max-receive-low", "maxReceiveCount 1-2: transient blips become DLQ noise"},
	{fnd.SevWarn, "max-receive-high", "maxReceiveCount above 10: poison messages burn capacity"},
	{fnd.SevWarn, "visibility-tiny", "source visibility timeout below 5s"},
	{fnd.SevWarn, "visibility-max", "source visibility timeout at the 12h maximum"},
	{fnd.SevWarn, "dlq-has-redrive-policy", "the DLQ itself has a RedrivePolicy"},
	{fnd.SevWarn, "no-encryption", "neither SQS-managed SSE nor a KMS key"},
	{fnd.SevWarn, "orphan-dlq", "a queue named like a DLQ that nothing targets"},
	{fnd.SevInfo, "retry-window-short", "maxReceiveCount x visibility under a minute"},
}
