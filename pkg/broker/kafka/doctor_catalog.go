package kafka

import "github.com/dlqctl/dlqctl/pkg/broker"

// DoctorChecks are the checks Doctor makes, as 'dlqctl doctor --help' lists
// them; a test holds them to the code.
var DoctorChecks = []broker.DoctorCheckDoc{
	{Name: kcheckTLS, What: "TLS in use (on by itself with AWS_MSK_IAM); AWS_MSK_IAM with --kafka-tls=false fails"},
	{Name: kcheckBootstrap, What: "which bootstrap brokers answered, the cluster's brokers"},
	{Name: kcheckSASL, What: "the mechanism and whether the login was accepted; AWS_MSK_IAM: the AWS credentials are loaded first"},
	{Name: kcheckTopic, What: "partitions, replication, records pending for --kafka-group"},
	{Name: kcheckTopicConfig, What: "cleanup.policy, retention.ms (a warning when short for a DLT, or compacted)"},
	{Name: kcheckGroup, What: "dlqctl's consumer group (default dlqctl-TOPIC): state, members, committed partitions"},
	{Name: kcheckGroupPerms, What: "committing needs Read on the group and the topic: proven from the operations the brokers report for this client (KIP-430), never by committing; not-checked when they do not report them"},
}
