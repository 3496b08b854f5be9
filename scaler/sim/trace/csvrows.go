package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
)

// table reads a CSV file with a header row, giving each row's fields by column name.
type table struct {
	r    *csv.Reader
	cols map[string]int
	row  []string
	line int
}

// newTable reads the header. The required names must all be present (in any order); a name
// the reader reads, required or optional, may be given once.
func newTable(r io.Reader, required, optional []string) (*table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file: no header row")
		}
		return nil, fmt.Errorf("reading header: %w", err)
	}
	line, _ := cr.FieldPos(0)
	t := &table{r: cr, cols: map[string]int{}}
	for i, name := range head {
		name = strings.ToLower(strings.TrimSpace(name))
		if j, ok := t.cols[name]; ok && (slices.Contains(required, name) || slices.Contains(optional, name)) {
			// One of the two would be read, unsaid (a join of two exports, a column pasted twice).
			return nil, fmt.Errorf("line %d: column %s is given twice (columns %d and %d)", line, name, j+1, i+1)
		}
		t.cols[name] = i
	}
	var missing []string
	for _, name := range required {
		if _, ok := t.cols[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 && len(head) == 1 && strings.ContainsAny(head[0], ";\t") {
		// Excel's CSV where the decimal mark is a comma, or a TSV: "lacks submit, duration"
		// of a header that names them misled.
		return nil, fmt.Errorf("line %d: the header is one column, %s: separate the columns with commas", line, errtext.Quote(head[0]))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("line %d: header lacks column(s) %s", line, strings.Join(missing, ", "))
	}
	return t, nil
}

// next advances to the next row; false at the end. A row the CSV reader rejects is returned
// as an error with its line, and reading goes on. A row of blank fields (",,,", or spaces:
// a spreadsheet's leftovers) is skipped as the CSV reader skips an empty line.
func (t *table) next() (bool, error) {
	row, err := t.r.Read()
	for err == nil && blank(row) {
		row, err = t.r.Read()
	}
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			t.line, t.row = pe.StartLine, nil
			return true, pe.Err
		}
		return false, fmt.Errorf("reading trace: %w", err)
	}
	t.line, _ = t.r.FieldPos(0)
	t.row = row
	return true, nil
}

// blank reports whether every field of row is empty (TrimLeadingSpace took any spaces).
func blank(row []string) bool {
	for _, f := range row {
		if f != "" {
			return false
		}
	}
	return true
}

// rows calls row for every data row, with the named integer columns parsed in order. A row the
// CSV reader rejects, a bad integer, or an error from row is recorded in bad with the row's line,
// and reading goes on; rows fails only when the file itself cannot be read.
func (t *table) rows(bad *rowErrors, cols []string, row func(v []int64) error) error {
	for {
		ok, err := t.next()
		if !ok {
			return err
		}
		if err == nil {
			var v []int64
			if v, err = t.ints(cols...); err == nil {
				err = row(v)
			}
		}
		if err != nil {
			bad.add(t.line, "%v", err)
		}
	}
}

// has reports whether the file has the column.
func (t *table) has(name string) bool { _, ok := t.cols[name]; return ok }

// str is the row's field for a column ("" when the row is short or the column absent).
func (t *table) str(name string) string {
	i, ok := t.cols[name]
	if !ok || i >= len(t.row) {
		return ""
	}
	return strings.TrimSpace(t.row[i])
}

// ints parses the named integer columns in order, reporting the first bad one.
func (t *table) ints(names ...string) ([]int64, error) {
	out := make([]int64, len(names))
	for i, name := range names {
		s := t.str(name)
		v, err := parseInt(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[i] = v
	}
	return out, nil
}

// maxValue bounds every number a trace gives (seconds or units): about 35,000 years, so sums of
// times never overflow.
const maxValue = 1 << 40

// parseInt reads a non-negative integer count of seconds or units; "12.0" is accepted (some
// exports write integers as floats) but "12.5" is not.
func parseInt(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("missing")
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		switch {
		case v < 0:
			return 0, fmt.Errorf("%d is negative", v)
		case v > maxValue:
			return 0, fmt.Errorf("%d is out of range", v)
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int64(f)) || f > maxValue {
		return 0, fmt.Errorf("%s is not a whole number", errtext.Quote(s))
	}
	if f < 0 {
		return 0, fmt.Errorf("%s is negative", errtext.Quote(s))
	}
	return int64(f), nil
}
