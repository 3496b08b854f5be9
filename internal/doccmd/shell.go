package doccmd

import (
	"errors"
	"strings"
)

// split reads one shell line into its simple commands' words: quotes resolved, $NAME and
// ${NAME} replaced from vars (anything else the shell would expand becomes Placeholder),
// comments and redirections dropped, and the line cut at |, ||, &&, ; and &. A '|' inside a
// word (resume|suspend) is a synopsis' alternative, kept in the word.
func split(line string, vars map[string]string) ([][]string, error) {
	var (
		cmds    [][]string
		words   []string
		word    strings.Builder
		inWord  bool // a word has started (an empty quoted word counts)
		unknown bool // the word holds an expansion only the shell knows
		skip    bool // the next word is a redirection's target
	)
	end := func() {
		if !inWord {
			return
		}
		w := word.String()
		switch {
		case skip:
			skip = false
		case redirection(w):
			// A lone operator takes the next word; one with an expansion glued on has its target.
			skip = redirectionAlone(w) && !unknown
		case unknown:
			words = append(words, Placeholder)
		default:
			words = append(words, w)
		}
		word.Reset()
		inWord, unknown = false, false
	}
	cut := func() {
		end()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unclosed '")
			}
			word.WriteString(line[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				switch {
				case line[j] == '\\' && j+1 < len(line):
					j++
					word.WriteByte(line[j])
				case line[j] == '$':
					n, known := expand(line[j:], vars, &word)
					unknown = unknown || !known
					j += n - 1
				default:
					word.WriteByte(line[j])
				}
			}
			if j >= len(line) {
				return nil, errors.New(`unclosed "`)
			}
			inWord, i = true, j
		case c == '\\' && i+1 < len(line):
			i++
			word.WriteByte(line[i])
			inWord = true
		case c == '$':
			n, known := expand(line[i:], vars, &word)
			unknown = unknown || !known
			inWord, i = true, i+n-1
		case c == '#' && !inWord:
			cut()
			return cmds, nil
		case c == ' ' || c == '\t':
			end()
		case c == ';' || c == '&':
			cut()
			if i+1 < len(line) && line[i+1] == '&' {
				i++
			}
		case c == '|' && (!inWord || i+1 >= len(line) || line[i+1] == ' ' || line[i+1] == '|'):
			cut()
			if i+1 < len(line) && line[i+1] == '|' {
				i++
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	cut()
	return cmds, nil
}

// expand reads the expansion s starts with ($NAME, ${NAME}, $(...), $@ and the like), writes
// its value when vars knows it, and returns how many bytes it took and whether it was known.
func expand(s string, vars map[string]string, w *strings.Builder) (int, bool) {
	switch {
	case strings.HasPrefix(s, "$("):
		depth := 0
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					return i + 1, false
				}
			}
		}
		return len(s), false
	case strings.HasPrefix(s, "${"):
		if j := strings.IndexByte(s, '}'); j > 0 {
			v, ok := vars[s[2:j]]
			w.WriteString(v)
			return j + 1, ok
		}
		return len(s), false
	}
	n := 1
	for n < len(s) && (s[n] == '_' || 'a' <= s[n] && s[n] <= 'z' || 'A' <= s[n] && s[n] <= 'Z' || '0' <= s[n] && s[n] <= '9') {
		n++
	}
	if n == 1 {
		if len(s) > 1 && strings.IndexByte("@*#?!$-", s[1]) >= 0 {
			return 2, false // "$@" and the shell's other specials
		}
		w.WriteByte('$') // a lone $, as in a regular expression's '^$'
		return 1, true
	}
	v, ok := vars[s[1:n]]
	w.WriteString(v)
	return n, ok
}

// redirection reports whether a word is a redirection (>f, 2>>f, <<<word, 1>&2, >).
func redirection(w string) bool {
	w = strings.TrimLeft(w, "0123456789&")
	return strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<")
}

// redirectionAlone reports whether a redirection's target is the next word (a lone ">").
func redirectionAlone(w string) bool {
	return strings.Trim(w, "0123456789&<>") == ""
}
