// Package exec is the job-manager adapter that runs the user's own programs, in the style of
// Slurm's SuspendProgram and ResumeProgram: one program prints what each server runs, one
// prints the work waiting, one drains a server and one resumes it. It fits any scheduler a
// short script can query.
//
// Programs run without a shell (the configured command line is split into words like a shell
// would, quotes included, but nothing is expanded), each bounded by jobs.timeout, with stdout
// capped. A program that exits non-zero, runs past its timeout, prints too much or prints
// anything but the documented JSON makes the whole call fail with an *Error naming the program
// and the problem: the scaler never acts on a partial view.
//
// The JSON the state and demand programs print is documented in docs/job-managers.md
// and in the doc comments of StateOutput and DemandOutput.
package exec
