// Package report is the `report` stage, the finally task of every run: it
// reads what each stage left in the work workspace and the status Tekton
// gives each task, and prints one summary as plain text within 100
// columns (the Dashboard's and tkn's log panes); report/summary.md holds
// the same as Markdown for where Markdown is rendered (a pull request).
package report
