package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with the file, at Path (e.g. pools[1].nodes[3].bmc.host) and, when
// the file says, Line (0: unknown).
type Problem struct {
	Path    string
	Message string
	Line    int
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s: %s (line %d)", p.Path, p.Message, p.Line)
	}
	return p.Path + ": " + p.Message
}

// ValidationError lists every problem found; nothing in the file was taken into use.
type ValidationError struct {
	File     string
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.File != "" {
		fmt.Fprintf(&b, "%s: ", e.File)
	}
	fmt.Fprintf(&b, "%d problem(s) in config:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

type problems []Problem

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}
