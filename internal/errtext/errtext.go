// Package errtext quotes outside input for error and log messages without echoing it whole: a
// node name, a config value or a request field of any size is cut to a few dozen bytes, so a
// 100 MB value makes a 100-byte message, not a 100 MB one.
package errtext

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Max is the most bytes of a value Quote keeps.
const Max = 64

// Quote returns s quoted as %q does, cut to its first Max bytes with the full length said after
// it: "gpu0000000…" (1048576 bytes).
func Quote(s string) string {
	if len(s) <= Max {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s (%d bytes)", strconv.Quote(Cut(s, Max)), len(s))
}

// Cut returns s whole if it has at most n bytes, else its first n bytes (on a character
// boundary) followed by "…".
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Of returns err's text cut to 4*Max bytes, for the errors of parsers that quote the input
// they refuse whole (encoding/json a number, time a timestamp twice).
func Of(err error) string { return Cut(err.Error(), 4*Max) }
