package cmdline

import (
	"errors"
	"strings"
)

// Split splits a command line into words as a POSIX shell would, without expanding
// anything: blanks separate words; 'single quotes' keep everything; "double quotes" keep
// everything but \" \\ \$ and \` (backslash escapes); a backslash outside quotes keeps the next
// character.
func Split(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
		quote  byte // 0, '\'' or '"'
		escape bool
	)
	// Bytes, not runes: every special character is ASCII, and other bytes pass through as they
	// are, valid UTF-8 or not.
	for i := 0; i < len(s); i++ {
		r := s[i]
		switch {
		case escape:
			if quote == '"' && strings.IndexByte(`"\$`+"`", r) < 0 {
				cur.WriteByte('\\')
			}
			cur.WriteByte(r)
			escape = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteByte(r)
			}
		case r == '\\':
			escape, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteByte(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(r)
			inWord = true
		}
	}
	switch {
	case escape:
		return nil, errors.New("command line ends with a backslash")
	case quote != 0:
		return nil, errors.New("command line has an unterminated quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("command line is empty")
	}
	return words, nil
}

// Join is Split's inverse: words joined by blanks, each that holds anything but letters,
// digits and _@%+=:,./- single-quoted (a single quote inside closes the quotes, is escaped
// with a backslash and opens them again), so Split(Join(w)) is w.
func Join(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = w
		if w == "" || strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") != "" {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}
