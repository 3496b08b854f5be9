package cmdline

import (
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
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
			got, err := Split(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzSplit: never panics, words without quoting characters round-trip, and Join gives back
// a line that splits into the same words.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"prog a b", `p 'a b' "c\"d" e\ f`, `"`, `\`, "", "a\tb\nc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := Split(s)
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
		if again, err := Split(Join(words)); err != nil || !slices.Equal(again, words) {
			t.Fatalf("%q split into %q, joined into %q, split again into %q (%v)", s, words, Join(words), again, err)
		}
	})
}

func TestJoin(t *testing.T) {
	words := []string{"/etc/rota dir/drain", "--reason=it's idle", "", `a"b\c`, "$HOME", "plain-word_1.0"}
	line := Join(words)
	if want := `'/etc/rota dir/drain' '--reason=it'\''s idle' '' 'a"b\c' '$HOME' plain-word_1.0`; line != want {
		t.Errorf("Join = %s, want %s", line, want)
	}
	if got, err := Split(line); err != nil || !slices.Equal(got, words) {
		t.Errorf("Split(Join(w)) = %q (%v), want %q", got, err, words)
	}
}
