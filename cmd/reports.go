package cmd

import "github.com/dlqctl/dlqctl/pkg/report"

// The JSON shapes of the commands' output live in pkg/report with their
// printers; these names keep them reachable as cmd.X for the CLI tests.
type (
	// ArchiveSummary is the JSON summary of an archive run.
	ArchiveSummary = report.ArchiveSummary
	// ArchivePlanOutput is the JSON of archive --dry-run.
	ArchivePlanOutput = report.ArchivePlanOutput
	// ArchiveVerifyRuns is the JSON of archive verify over several runs.
	ArchiveVerifyRuns = report.ArchiveVerifyRuns
	// RestoreSummary is the JSON summary of a restore.
	RestoreSummary = report.RestoreSummary
	// RestorePlanOutput is the JSON of restore --dry-run.
	RestorePlanOutput = report.RestorePlanOutput
	// GroupReport is the JSON output of group.
	GroupReport = report.GroupReport
	// ClassifyReport is the JSON output of classify --summary.
	ClassifyReport = report.ClassifyReport
	// ClassSummary is one row of ClassifyReport.
	ClassSummary = report.ClassSummary
	// ExplainReport is the JSON output of classify --explain.
	ExplainReport = report.ExplainReport
)
