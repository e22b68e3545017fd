// Package report renders the results of dlqctl's commands: the tables a
// person reads, the JSON and NDJSON a script reads, and the sentences on
// standard error that go with them (filter errors, verdicts). It writes
// only to the streams it is given (output.IOStreams), never decides exit
// codes beyond the verdict errors it returns, and knows no broker SDK.
package report
