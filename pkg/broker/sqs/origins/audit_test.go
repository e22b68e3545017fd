package origins

import "testing"

// allowsSNS decides whether SNS may write to a subscription's DLQ from the
// queue policy alone: what AWS would allow, what it would deny, and what
// audit cannot tell (a note rather than a guess).
func TestAllowsSNSEvaluatesTheQueuePolicy(t *testing.T) {
	const q = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
	const topic = "arn:aws:sns:us-east-1:123456789012:orders"
	stmt := func(s string) string { return `{"Version":"2012-10-17","Statement":[` + s + `]}` }
	allowSNS := `{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + q + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topic + `"}}}`
	for _, c := range []struct {
		name, policy string
		want         policyVerdict
	}{
		{"no policy", "", policyDenies},
		{"the fix's policy", SNSDLQPolicy(q, topic), policyAllows},
		{"single statement object, list values", `{"Statement":{"Effect":"Allow","Principal":{"Service":["lambda.amazonaws.com","sns.amazonaws.com"]},"Action":["sqs:ReceiveMessage","sqs:SendMessage"],"Resource":["` + q + `"]}}`, policyAllows},
		{"wildcards", stmt(`{"Effect":"Allow","Principal":"*","Action":"sqs:*","Resource":"arn:aws:sqs:us-east-1:123456789012:orders-*","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:sns:us-east-1:123456789012:*"}}}`), policyAllows},
		{"source account", stmt(`{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"SQS:SendMessage","Resource":"` + q + `","Condition":{"StringEquals":{"aws:SourceAccount":"123456789012"}}}`), policyAllows},
		{"another topic", SNSDLQPolicy(q, "arn:aws:sns:us-east-1:123456789012:payments"), policyDenies},
		{"another queue", SNSDLQPolicy("arn:aws:sqs:us-east-1:123456789012:payments-dlq", topic), policyDenies},
		{"another principal", stmt(`{"Effect":"Allow","Principal":{"Service":"events.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + q + `"}`), policyDenies},
		{"receive only", stmt(`{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:ReceiveMessage","Resource":"` + q + `"}`), policyDenies},
		{"an explicit deny wins", stmt(allowSNS + `,{"Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Resource":"` + q + `"}`), policyDenies},
		{"a deny for another topic does not", stmt(allowSNS + `,{"Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Resource":"` + q + `","Condition":{"ArnEquals":{"aws:SourceArn":"arn:aws:sns:us-east-1:123456789012:other"}}}`), policyAllows},
		{"a condition audit does not evaluate", stmt(`{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + q + `","Condition":{"Bool":{"aws:SecureTransport":"true"}}}`), policyUnknown},
		{"not JSON", "{", policyUnknown},
	} {
		if got := allowsSNS(c.policy, q, topic); got != c.want {
			t.Errorf("%s: verdict %d, want %d\n%s", c.name, got, c.want, c.policy)
		}
	}
}
