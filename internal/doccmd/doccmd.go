// Package doccmd reads the command lines that README.md and the docs/ pages show, so tests can
// hold each one to the real binaries' flags and subcommands, the Makefile's targets and the
// repository's files: a documented command that no longer runs fails a test.
//
// Commands come from ```sh blocks (each simple command of a line: pipes, && and ; split it,
// comments and redirections are dropped, a for loop's variable takes its first value) and from
// inline code that starts with one of the project's programs or make (a mention: it may leave
// out what the command needs). Synopses ([optional] parts, a|b alternatives, NODE...) are
// expanded by Variants.
package doccmd

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Placeholder stands for a word the docs leave to the shell (a variable no loop sets, a
// command substitution): a value of the right place, never a path to check.
const Placeholder = "ARG"

// Programs returns the names of the project's own binaries, as the docs name them.
func Programs() []string {
	return []string{"rota", "rotactl", "rota-exporter", "rota-lab", "rota-lab-exporter", "rota-redfish-emulator"}
}

// Command is one command line of the docs.
type Command struct {
	// File is the page, relative to the repository root; Line the line it starts on.
	File string
	Line int
	// Text is the command as written.
	Text string
	// Words are its words after the shell's quoting, Placeholder for what only the shell knows.
	Words []string
	// Mention is set for inline code: the command is named, its arguments may be left out.
	Mention bool
}

func (c Command) String() string { return fmt.Sprintf("%s:%d: %s", c.File, c.Line, c.Text) }

// Program is the command's program without its folder (bin/rotactl and /usr/bin/rotactl are
// rotactl).
func (c Command) Program() string {
	if len(c.Words) == 0 {
		return ""
	}
	return path.Base(c.Words[0])
}

// Args are the words after the program.
func (c Command) Args() []string { return c.Words[1:] }

// Pages returns README.md and every docs/*.md under root, relative to it.
func Pages(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.ToSlash(must(filepath.Rel(root, d))))
	}
	return out, nil
}

func must(s string, err error) string {
	if err != nil {
		panic(err) // filepath.Rel of a path Glob found under root
	}
	return s
}

// Read returns the commands of every page under root, page by page, in order.
func Read(root string) ([]Command, error) {
	pages, err := Pages(root)
	if err != nil {
		return nil, err
	}
	var out []Command
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return nil, err
		}
		cmds, err := Parse(p, string(b))
		if err != nil {
			return nil, err
		}
		out = append(out, cmds...)
	}
	return out, nil
}

// Of returns the commands that run program.
func Of(cmds []Command, program string) []Command {
	var out []Command
	for _, c := range cmds {
		if c.Program() == program {
			out = append(out, c)
		}
	}
	return out
}

var inlineCode = regexp.MustCompile("`([^`\n]+)`")

// Parse reads the commands of one page: file names it in the commands, text is its content.
func Parse(file, text string) ([]Command, error) {
	var out []Command
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	fence, inShell := false, false
	var block []string
	start := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "```") {
			switch {
			case !fence:
				fence, inShell, block, start = true, strings.TrimPrefix(trimmed, "```") == "sh", nil, n+1
			default:
				if inShell {
					cmds, err := shellBlock(file, start, block)
					if err != nil {
						return nil, err
					}
					out = append(out, cmds...)
				}
				fence, inShell = false, false
			}
			continue
		}
		if fence {
			block = append(block, line)
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			code := strings.ReplaceAll(m[1], `\|`, "|")
			words, err := split(code, map[string]string{})
			if err != nil || len(words) == 0 || len(words[0]) == 0 {
				continue // inline code that is not a command line
			}
			// A program named bare or as built (bin/rotactl); /usr/bin/rota alone is a path.
			c := Command{File: file, Line: n, Text: m[1], Words: words[0], Mention: true}
			if mentioned(c.Words) {
				out = append(out, c)
			}
		}
	}
	if fence {
		return nil, fmt.Errorf("%s: a code block opened at line %d is not closed", file, start-1)
	}
	return out, sc.Err()
}

// mentioned reports whether inline code is a command line: one of the project's programs,
// bare or as built (bin/rotactl; /usr/bin/rota alone is a path), make with a target, go test
// or one of the repository's scripts.
func mentioned(words []string) bool {
	first := strings.TrimPrefix(words[0], "bin/")
	return slices.Contains(Programs(), first) ||
		first == "make" && len(words) > 1 ||
		first == "go" && len(words) > 2 && words[1] == "test" ||
		strings.HasPrefix(first, "scripts/") && strings.HasSuffix(first, ".sh")
}

// shellBlock reads the simple commands of one ```sh block that starts at line first.
func shellBlock(file string, first int, lines []string) ([]Command, error) {
	var out []Command
	vars := map[string]string{}
	for i := 0; i < len(lines); i++ {
		at, line := first+i, lines[i]
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + lines[i]
		}
		// A for loop sets its variable for its own line too ("for t in a b; do x $t; done").
		cmds, err := split(line, vars)
		for _, words := range cmds {
			simple(words, vars)
		}
		if err == nil {
			cmds, err = split(line, vars)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, at, err)
		}
		for _, words := range cmds {
			if words = simple(words, vars); len(words) > 0 {
				out = append(out, Command{File: file, Line: at, Text: strings.TrimSpace(line), Words: words})
			}
		}
	}
	return out, nil
}

// simple drops what runs around a command (time, exec, sudo, variable assignments, the words
// of a loop) and records a for loop's variable with its first value.
func simple(words []string, vars map[string]string) []string {
	for len(words) > 0 {
		switch w := words[0]; {
		case w == "for" && len(words) >= 4 && words[2] == "in":
			vars[words[1]] = words[3]
			return nil
		case w == "do" || w == "then" || w == "else" || w == "time" || w == "exec" || w == "sudo":
			words = words[1:]
		case w == "done" || w == "fi" || w == "export":
			return nil
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-") && !strings.ContainsAny(w[:strings.Index(w, "=")], "/."):
			words = words[1:] // NAME=value before the command
		default:
			return words
		}
	}
	return nil
}
