package origins

import fnd "github.com/dlqctl/dlqctl/pkg/finding"

// AuditRules are the checks of the Lambda, SNS and EventBridge audit
// (Auditor), as 'dlqctl audit --help' lists them; a test holds them to the
// code.
var AuditRules = []fnd.Rule{
	{Severity: fnd.SevError, Check: CheckSNSDLQUnwritable, Summary: "a subscription's DLQ SNS may not write to (queue policy, other account/region, gone)"},
	{Severity: fnd.SevWarn, Check: CheckLambdaNoRetries, Summary: "a function's DLQ or on-failure destination, its async MaximumRetryAttempts 0"},
	{Severity: fnd.SevWarn, Check: CheckEventBridgeNoDLQ, Summary: "a rule target with no DeadLetterConfig (an audited queue, a function whose DLQ is audited, or any target: region audit)"},
}
