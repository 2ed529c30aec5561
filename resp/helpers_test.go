package resp

import (
	"strconv"
	"strings"
	"testing"

	"github.com/volleylock/volley/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// render writes a reply as a compact string, so tests can state a whole tree
// in one line: "*2[$a :1]", "%1[+k ,1.5]", "$nil", "_". It also checks the
// tree's structure: an aggregate's Size must cover exactly Int children (2*Int
// for maps and attributes), attributes not counted.
func render(vals []Value) string {
	var sb strings.Builder
	for i := 0; i < len(vals); {
		if i > 0 {
			sb.WriteByte(' ')
		}
		i = renderOne(&sb, vals, i)
	}
	return sb.String()
}

func renderOne(sb *strings.Builder, vals []Value, i int) int {
	v := &vals[i]
	sb.WriteByte(byte(v.Type))
	switch {
	case v.Null && v.Type != TypeNull:
		sb.WriteString("nil")
		return i + 1
	case v.Type == TypeInteger:
		sb.WriteString(strconv.FormatInt(v.Int, 10))
		return i + 1
	case v.Type == TypeBoolean:
		sb.WriteString(map[int64]string{0: "f", 1: "t"}[v.Int])
		return i + 1
	case v.Type == TypeNull:
		return i + 1
	case !v.Type.IsAggregate():
		sb.Write(v.Bytes)
		return i + 1
	}
	sb.WriteString(strconv.FormatInt(v.Int, 10))
	sb.WriteByte('[')
	end := i + 1 + v.Size
	if end > len(vals) {
		sb.WriteString("BAD SIZE]")
		return len(vals)
	}
	kids := 0
	for j := i + 1; j < end; {
		if j > i+1 {
			sb.WriteByte(' ')
		}
		if vals[j].Type != TypeAttribute {
			kids++
		}
		j = renderOne(sb, vals, j)
	}
	want := int(v.Int)
	if v.Type == TypeMap || v.Type == TypeAttribute {
		want *= 2
	}
	if kids != want {
		sb.WriteString(" BAD COUNT")
	}
	sb.WriteByte(']')
	return end
}

func itoa(n int) string { return strconv.Itoa(n) }
