package strictjson

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	Jobs  int      `json:"jobs"`
	Names []string `json:"names,omitempty"`
}

type outer struct {
	Nodes map[string]inner `json:"nodes"`
	List  []inner          `json:"list,omitempty"`
	Plain int              // no tag: its Go name
	embedded
}

type embedded struct {
	Since string `json:"since,omitempty"`
}

func TestDecode(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		unknown Unknown
		want    string // error text; "" decodes
	}{
		{"good", `{"nodes": {"n1": {"jobs": 3}}, "list": [{"jobs": 1}], "Plain": 2, "since": "x"}`, RefuseUnknown, ""},
		{"empty", ``, RefuseUnknown, "EOF"},
		{"only blanks", " \n", RefuseUnknown, "EOF"},
		{"not JSON", `nodes`, RefuseUnknown, "invalid character"},
		{"data after", `{} {}`, RefuseUnknown, "data after the JSON object"},
		{"a map key given twice", `{"nodes": {"n1": {"jobs": 3}, "n1": {"jobs": 0}}}`, RefuseUnknown, `"n1" given twice`},
		{"a field given twice", `{"nodes": {"n1": {"jobs": 3, "jobs": 0}}}`, RefuseUnknown, `"jobs" given twice`},
		{"twice in a list's element", `{"list": [{"jobs": 1}, {"jobs": 1, "jobs": 2}]}`, RefuseUnknown, `"jobs" given twice`},
		{"an embedded field given twice", `{"since": "a", "since": "b"}`, RefuseUnknown, `"since" given twice`},
		{"a field in another case", `{"nodes": {"n1": {"jobs": 3, "JOBS": 0}}}`, RefuseUnknown, `unknown field "JOBS"`},
		{"another case where unknown are ignored", `{"nodes": {"n1": {"jobs": 3, "Jobs": 0}}}`, IgnoreUnknown, `unknown field "Jobs"`},
		{"unknown refused", `{"nodez": {}}`, RefuseUnknown, `unknown field "nodez"`},
		{"unknown ignored", `{"nodez": {"a": [1, {"b": 2}]}, "nodes": {}}`, IgnoreUnknown, ""},
		{"twice inside an ignored field", `{"nodez": {"a": 1, "a": 2}}`, IgnoreUnknown, `"a" given twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v outer
			err := Decode([]byte(c.in), &v, c.unknown)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if c.want == "EOF" && err != io.EOF {
				t.Errorf("an empty input is %v, want io.EOF unwrapped", err)
			}
		})
	}
}

// Whatever Decode takes, encoding/json reads the same; it never panics.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"nodes": {"n1": {"jobs": 3, "names": ["a"]}}}`, `{"list": [{"jobs": 1}]}`, `{"a": 1, "a": 2}`, `{"JOBS": 1}`, `[]`, `null`} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, b []byte, ignore bool) {
		var got outer
		if err := Decode(b, &got, Unknown(ignore)); err != nil {
			if errors.Is(err, io.EOF) && strings.TrimSpace(string(b)) != "" {
				t.Fatalf("io.EOF for a non-empty input %q", b)
			}
			return
		}
		var want outer
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("Decode took what encoding/json refuses (%v): %q", err, b)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode read %+v, encoding/json %+v", got, want)
		}
	})
}
