// Package jobsfake is an in-memory, scriptable jobs.Manager for other packages' tests: set the
// nodes and the demand it reports, inject an error per operation, and read back the drains and
// resumes it was asked for. It keeps the adapters' guarantees (whole views, idempotent drain and
// resume, ErrNotOurs for a drain made by someone else) and is safe for concurrent use.
package jobsfake
