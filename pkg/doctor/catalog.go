package doctor

import "github.com/dlqctl/dlqctl/pkg/broker"

// AWSChecks are the checks Run makes for SQS queues, --archive and --logs
// (and a bare 'dlqctl doctor'), as 'dlqctl doctor --help' lists them.
var AWSChecks = []broker.DoctorCheckDoc{
	{Name: "region", What: "the region in use and where it came from (--region, AWS_REGION, AWS_DEFAULT_REGION, the profile); none is a failure"},
	{Name: "credentials", What: "which provider gave them (environment, profile, SSO, AssumeRole, instance role) — never the keys themselves"},
	{Name: "identity", What: "sts:GetCallerIdentity: the account and the principal (not checked when SQS is a local stack and STS would be AWS)"},
	{Name: "endpoints", What: "every endpoint override (flags, AWS_ENDPOINT_URL*), and a failure when they point at a local stack while the credentials look real, or at AWS with a local stack's placeholder credentials"},
	{Name: "permissions", What: "for each QUEUE, each IAM action the runbooks of --role need, proven with calls that change nothing: sqs:GetQueueUrl, sqs:GetQueueAttributes, sqs:ListDeadLetterSourceQueues, sqs:ListMessageMoveTasks, sqs:ListQueues; the destinations (the DLQ's sources, or --to); with --archive s3:ListBucket (ListObjectsV2) and s3:GetObject (HeadObject); with --logs logs:FilterLogEvents. Receive, visibility, delete, send, move tasks and PutObject can only be proven by changing something (a receive increments ApproximateReceiveCount): doctor asks IAM's policy simulator about them (iam:SimulatePrincipalPolicy, for the role or user STS named; identity policies only), and when it may not, they are \"not-checked\", with the policy statement to verify and the aws iam simulate-principal-policy command for your role"},
	{Name: "state-dir", What: "run journals (redrive resume, restore, runs): writable (it creates the directory when missing, as any run would, and writes and removes one probe file), and whether they outlive this process: a warning on tmpfs and on a container's or pod's own filesystem"},
	{Name: "tool jq", What: "the runbooks pipe JSON through jq"},
}
