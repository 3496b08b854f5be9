package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Mode is what a config is read for; each checks what its reader uses.
type Mode int

const (
	// Daemon is everything rota needs to run: the default of Load and Parse.
	Daemon Mode = iota
	// Replay is what `rotactl simulate` reads: the policy, the classes and the pools (profiles,
	// costs, boot timeouts, floors, node names). The listener and its tokens, the store,
	// Prometheus, the job manager and the BMCs are neither needed nor checked (but for their
	// durations' maxima, which every reader holds a config to).
	Replay
)

// Load reads, defaults and validates the file at path for the daemon. A config that fails to
// parse or validate returns an error naming every problem; nothing of it should be used.
func Load(path string) (*Config, error) { return LoadFor(path, Daemon) }

// LoadFor is Load for the reader mode says. A relative path in the file (a token file, a
// password file, TLS files, a program) is read from the file's folder, not from the working
// directory (see resolvePaths).
func LoadFor(path string, mode Mode) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	c, err := parse(b, mode, filepath.Dir(abs))
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.File = path
			return nil, ve
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse is Load for bytes already read.
func Parse(b []byte) (*Config, error) { return ParseFor(b, Daemon) }

// ParseFor is LoadFor for bytes already read; with no file to be relative to, relative paths
// stay relative to the working directory. A value that cannot be decoded (an unknown key, a
// duration like "10 minutes") is a problem with its path and line among all the others, as is
// every validation problem; only a file that is not YAML at all stops at its first error.
func ParseFor(b []byte, mode Mode) (*Config, error) { return parse(b, mode, "") }

// parse is ParseFor with the relative paths resolved against dir, unless it is empty.
func parse(b []byte, mode Mode, dir string) (*Config, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("config is empty")
		}
		return nil, fmt.Errorf("parsing config: %w", err)
	}
	// A second document in the file would be silently ignored: refuse it.
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("parsing config: only one YAML document is allowed")
	}
	if len(root.Content) == 0 || root.Content[0].ShortTag() == "!!null" {
		return nil, errors.New("config is empty")
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, errNotMapping
	}
	// Decoded over the defaults: an absent key keeps its default, an explicit zero stays zero.
	c := defaults()
	var p problems
	if err := decodeChecked(doc, c, &p); err != nil {
		return nil, err
	}
	c.applyPoolDefaults(func(path string) bool { return given(doc, path) })
	if dir != "" {
		c.resolvePaths(dir)
	}
	undecoded := slices.Clone(p)
	c.validate(&p, mode)
	p = dropUnder(p, undecoded)
	for i := range p {
		if p[i].Line == 0 {
			p[i].Line = lineOf(doc, p[i].Path)
		}
	}
	if len(p) > 0 {
		return nil, &ValidationError{Problems: p}
	}
	return c, nil
}

// dropUnder drops the validation problems at or under a path whose value could not be decoded
// (it kept its default, or is empty): they would only repeat the first. So are those of the
// field holding it: they weigh it with its siblings (`watts: abc` is no reason to say that
// watts and an energy price go together). Paths are looked up, not compared pairwise: a
// fleet of 20,000 nodes, each with a bad value and a missing one, took seconds.
func dropUnder(p problems, undecoded problems) problems {
	at, holding := map[string]bool{}, map[string]bool{}
	for _, u := range undecoded {
		at[u.Path] = true
		if i := strings.LastIndexAny(u.Path, ".["); i > 0 {
			holding[u.Path[:i]] = true
		}
	}
	out := p[:len(undecoded)]
	for _, q := range p[len(undecoded):] {
		under := holding[q.Path] || at[q.Path]
		for i := range q.Path {
			under = under || (q.Path[i] == '.' || q.Path[i] == '[') && at[q.Path[:i]]
		}
		if !under {
			out = append(out, q)
		}
	}
	return out
}
