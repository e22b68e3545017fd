// Package clitest holds what the command tests share: Run (dlqctl
// in-process, its -o json/ndjson output checked against docs/schema), the
// shared read-only incident, queue depths, and seeding and reading helpers
// for SQS, RabbitMQ, Kafka and S3.
//
// The command tests live by area in the packages of cmd/cmdtest (archive,
// field, fifo, health, inspect, multiproc, redrive), which `go test` runs in
// parallel; tests that need cmd's unexported identifiers stay in package cmd
// and cannot use this package (it imports cmd). Everything here reaches the
// local stack started by scripts/stack.sh (internal/testenv) and fails or
// skips like testenv does.
package clitest
