// Package faults holds no code: its tests inject faults into whole instances
// and `chronos run` subprocesses on a broker from testenv (kill -9 in a
// fan-out, a backfill or a bulk operation; instances joining and leaving; a
// clock jump and the loss of the clock's owner; a broker restart; a lost data
// dir; a full disk; crash loops under -tags adversary35) and end each with an
// audit (testenv/audit) of chronos-dispatch: no expected fire missing, no
// unexpected one, duplicates identical. docs/reliability.md, "Faults tested",
// has their figures.
package faults
