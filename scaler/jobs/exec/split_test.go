package exec

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		wantErr  bool
	}{
		{name: "one word", in: "/usr/bin/state", want: []string{"/usr/bin/state"}},
		{name: "blanks", in: "  prog \t a  b\n", want: []string{"prog", "a", "b"}},
		{name: "single quotes keep all", in: `prog 'a b' '$HOME \n'`, want: []string{"prog", "a b", `$HOME \n`}},
		{name: "double quotes", in: `prog "a 'b' \"c\" \\ \$x \n"`, want: []string{"prog", `a 'b' "c" \ $x \n`}},
		{name: "backslash outside quotes", in: `prog a\ b \'`, want: []string{"prog", "a b", "'"}},
		{name: "empty quoted word", in: `prog '' ""`, want: []string{"prog", "", ""}},
		{name: "quotes join a word", in: `prog --reason="rota: idle"x`, want: []string{"prog", "--reason=rota: idlex"}},
		{name: "no expansion", in: "prog $HOME * ~ `x` ; | &&", want: []string{"prog", "$HOME", "*", "~", "`x`", ";", "|", "&&"}},
		{name: "empty", in: "  ", wantErr: true},
		{name: "unterminated single", in: "prog 'a", wantErr: true},
		{name: "unterminated double", in: `prog "a`, wantErr: true},
		{name: "trailing backslash", in: `prog \`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := splitCommand(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzSplitCommand: never panics, and words without quoting characters round-trip.
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"prog a b", `p 'a b' "c\"d" e\ f`, `"`, `\`, "", "a\tb\nc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitCommand(s)
		if err != nil {
			return
		}
		if len(words) == 0 {
			t.Fatal("no words and no error")
		}
		blank := func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }
		if !strings.ContainsAny(s, `'"\`) && !slices.Equal(words, strings.FieldsFunc(s, blank)) {
			t.Fatalf("%q split into %q", s, words)
		}
	})
}
