// Package size reads and writes sizes as rota's config gives them: a plain number of bytes or a
// base-2 unit (512GiB, 80GB read as GiB as Prometheus' flags read them, 1TiB).
package size

import (
	"fmt"
	"strconv"

	"github.com/alecthomas/units"

	"github.com/rotahq/rota/internal/errtext"
)

// Bytes is a size that YAML may give as a plain number or with a base-2 unit: 512GiB, 80GB
// (read as GiB, as in Prometheus' own flags), 1TiB.
type Bytes uint64

// UnmarshalYAML implements yaml.v3's obsolete (and yaml.v2's) unmarshaler.
func (b *Bytes) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	n, err := Parse(s)
	if err != nil {
		return err
	}
	*b = n
	return nil
}

// Parse reads a size as the config gives it: a plain number of bytes or a base-2 unit.
func Parse(s string) (Bytes, error) {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return Bytes(n), nil
	}
	n, err := units.ParseBase2Bytes(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s is not a size (e.g. 512GiB)", errtext.Quote(s))
	}
	return Bytes(n), nil
}

// MarshalYAML writes the size in the largest whole base-2 unit.
func (b Bytes) MarshalYAML() (any, error) {
	return units.Base2Bytes(b).String(), nil
}
