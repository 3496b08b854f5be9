// Package output holds what a program rota runs prints, bounded: its standard output up to a
// cap, past which the program's pipe is closed and the run is to fail, and the last bytes of
// its standard error, for the error that quotes it. The exec adapter's programs and Slurm's
// commands (internal/slurmcli) are read through it, so that no program, runaway or hostile,
// is read whole into memory.
package output

import "errors"

// ErrTooMuch is the error a Capped returns to the write past its cap.
var ErrTooMuch = errors.New("output over the limit")

// Capped keeps what is written up to Max bytes and fails the write that would pass it, which
// makes os/exec stop copying and close the program's pipe (the program then gets EPIPE or
// SIGPIPE). Over reports it: the run's own error then says only that the copy failed. What it
// keeps never takes more than Max bytes of storage (a bytes.Buffer, or append, growing it near
// the cap could take up to about twice: 512 MiB for Slurm's 256 MiB). Not safe for concurrent
// use; os/exec writes from one goroutine.
type Capped struct {
	Max  int64
	b    []byte
	over bool
}

// firstGrow is the storage a Capped takes at its first write (unless the write or Max says
// otherwise); it then doubles at each growth, up to Max.
const firstGrow = 512

func (c *Capped) Write(p []byte) (int, error) {
	need := int64(len(c.b)) + int64(len(p))
	if c.over || need > c.Max {
		c.over = true
		return 0, ErrTooMuch
	}
	if need > int64(cap(c.b)) {
		grown := make([]byte, len(c.b), min(max(2*int64(cap(c.b)), need, firstGrow), c.Max))
		copy(grown, c.b)
		c.b = grown
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// Over reports whether the program printed more than Max bytes.
func (c *Capped) Over() bool { return c.over }

// Bytes returns what was kept.
func (c *Capped) Bytes() []byte { return c.b }

// Tail keeps the last Max bytes written (where a failing program says why) and never fails a
// write, so a program is never stopped for what it prints on standard error.
type Tail struct {
	Max int
	b   []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	if len(p) >= t.Max {
		t.b = append(t.b[:0], p[len(p)-t.Max:]...)
		return len(p), nil
	}
	t.b = append(t.b, p...)
	if len(t.b) > t.Max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.Max:]...)
	}
	return len(p), nil
}

// String returns the bytes kept.
func (t *Tail) String() string { return string(t.b) }
