package seed

// PlanForTest exposes the deterministic message plan to the external tests.
var PlanForTest = plan
