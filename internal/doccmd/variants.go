package doccmd

import "strings"

// maxVariants bounds how many command lines one synopsis expands to.
const maxVariants = 256

// Variants expands a synopsis into the command lines it stands for: each [optional] part (one
// word or several, "[-o table|json]") present and absent, each a|b alternative in turn, and
// NODE... as NODE. A plain command line gives itself.
func Variants(args []string) [][]string {
	out := [][]string{nil}
	for i := 0; i < len(args); i++ {
		group := []string{args[i]}
		optional := strings.HasPrefix(args[i], "[")
		if optional {
			for !strings.HasSuffix(group[len(group)-1], "]") && i+1 < len(args) {
				i++
				group = append(group, args[i])
			}
			group[0] = strings.TrimPrefix(group[0], "[")
			group[len(group)-1] = strings.TrimSuffix(group[len(group)-1], "]")
		}
		choices := alternatives(group)
		if optional {
			choices = append(choices, nil)
		}
		var next [][]string
		for _, prefix := range out {
			for _, c := range choices {
				if len(next) == maxVariants {
					break
				}
				next = append(next, append(append([]string(nil), prefix...), c...))
			}
		}
		out = next
	}
	return out
}

// alternatives expands the words of one part: every combination of their a|b choices.
func alternatives(words []string) [][]string {
	out := [][]string{nil}
	for _, w := range words {
		var next [][]string
		for _, prefix := range out {
			for _, alt := range choices(w) {
				next = append(next, append(append([]string(nil), prefix...), alt))
			}
		}
		out = next
	}
	return out
}

// choices splits one word at its '|' (after a flag's '=': --log.format=logfmt|json is
// --log.format=logfmt and --log.format=json) and drops a trailing "...".
func choices(w string) []string {
	w = strings.TrimSuffix(w, "...")
	prefix := ""
	if strings.HasPrefix(w, "-") {
		if i := strings.IndexByte(w, '='); i >= 0 {
			prefix, w = w[:i+1], w[i+1:]
		}
	}
	var out []string
	for _, alt := range strings.Split(w, "|") {
		out = append(out, prefix+alt)
	}
	return out
}
