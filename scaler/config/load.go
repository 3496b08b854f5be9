package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// Load reads, defaults and validates the file at path. A config that fails to parse or
// validate returns an error naming every problem; nothing of it should be used.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	c, err := Parse(b)
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
func Parse(b []byte) (*Config, error) {
	// Decoded over the defaults: an absent key keeps its default, an explicit zero stays zero.
	c := defaults()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
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
	c.applyPoolDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
