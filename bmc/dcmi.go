package bmc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
)

// ParseDCMIPowerReading reads the instantaneous power draw from `ipmitool dcmi power reading`.
// It accepts ipmitool 1.8.19's layout ("    Instantaneous power reading:      220 Watts") and
// the later one ("Instantaneous power reading              : 220      Watts"). A BMC that says
// its power reading state is deactivated has no reading (ErrNoReading); output without the
// line, or with a value that is not a whole number of watts, is an error.
func ParseDCMIPowerReading(out string) (float64, error) {
	watts, found := 0.0, false
	for _, line := range strings.Split(out, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "Power reading state is":
			if strings.EqualFold(val, "deactivated") {
				return 0, fmt.Errorf("%w: the bmc's power reading is deactivated", ErrNoReading)
			}
		case "Instantaneous power reading":
			f := strings.Fields(val)
			if len(f) != 2 || f[1] != "Watts" {
				return 0, fmt.Errorf("dcmi power reading: %s is not a number of watts", errtext.Quote(val))
			}
			n, err := strconv.ParseUint(f[0], 10, 16) // DCMI carries the reading in 16 bits
			if err != nil {
				return 0, fmt.Errorf("dcmi power reading: %s is not a number of watts", errtext.Quote(val))
			}
			watts, found = float64(n), true
		}
	}
	if !found {
		return 0, fmt.Errorf("dcmi power reading: no instantaneous power reading in ipmitool's output")
	}
	return watts, nil
}

// DCMIUnsupported reports whether ipmitool's output says the BMC does not implement DCMI power
// readings (ipmi_sim answers Invalid command (c1)).
func DCMIUnsupported(out string) bool {
	for _, s := range []string{"Invalid command", "not supported", "Not supported", "Error discovering"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}
