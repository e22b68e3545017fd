package origins

import fnd "github.com/dlqctl/dlqctl/pkg/finding"

// AuditRules are the checks of the Lambda, SNS and EventBridge audit
// (Auditor), as 'dlqctl audit --help' lists them; a test holds them to the
// code.
var AuditRules = []fnd.Rule{
	{fnd.SevError, CheckSNSDLQUnwritable, "a subscription's DLQ SNS may not write to (queue policy, other account/region, gone)"},
	{fnd.SevWarn, CheckLambdaNoRetries, "a function's DLQ or on-failure destination, its async MaximumRetryAttempts 0"},
	{fnd.SevWarn, CheckEventBridgeNoDLQ, "a rule target with no DeadLetterConfig (an audited queue, a function whose DLQ is audited, or any target: region audit)"},
}
