package errtext

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"short", "gpu01", `"gpu01"`},
		{"empty", "", `""`},
		{"control characters are escaped", "a\nb", `"a\nb"`},
		{"exactly Max", strings.Repeat("a", Max), `"` + strings.Repeat("a", Max) + `"`},
		{"long", strings.Repeat("a", 1<<20), `"` + strings.Repeat("a", Max) + `…" (1048576 bytes)`},
		{"cut on a character boundary", strings.Repeat("a", Max-1) + "é" + "zz", `"` + strings.Repeat("a", Max-1) + `…" (67 bytes)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Quote(c.in); got != c.want {
				t.Errorf("Quote = %s, want %s", got, c.want)
			}
		})
	}
}

func TestCut(t *testing.T) {
	if got := Cut("abcdef", 3); got != "abc…" {
		t.Errorf("Cut = %q", got)
	}
	if got := Cut("abc", 3); got != "abc" {
		t.Errorf("Cut = %q", got)
	}
	if got := Cut("aé", 2); got != "a…" {
		t.Errorf("Cut = %q, want the é left whole", got)
	}
}

// FuzzQuote: whatever the input, the quote is short and valid UTF-8.
func FuzzQuote(f *testing.F) {
	f.Add("gpu01")
	f.Add(strings.Repeat("é", 100))
	f.Add("\xff\xfe")
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		if len(q) > 4*Max+32 || !utf8.ValidString(q) {
			t.Errorf("Quote(%d bytes) = %d bytes %q", len(s), len(q), q)
		}
	})
}

func TestOf(t *testing.T) {
	short := errors.New("json: cannot unmarshal number 7")
	if got := Of(short); got != short.Error() {
		t.Errorf("Of = %q, want the error whole", got)
	}
	long := errors.New("json: cannot unmarshal number " + strings.Repeat("7", 1<<20))
	if got := Of(long); len(got) != 4*Max+len("…") || !strings.HasPrefix(got, "json: cannot unmarshal number 777") {
		t.Errorf("Of = %.300q (%d bytes), want its first %d bytes", got, len(got), 4*Max)
	}
}
