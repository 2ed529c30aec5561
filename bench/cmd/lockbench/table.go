package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// section is one part of the written report: a blank line, then its
// title, its table and the lines under the table.
type section interface {
	// empty reports whether the section has nothing to show; the report
	// leaves it out.
	empty() bool
	write(w io.Writer)
}

// table is a section as data: one row per element of rows, one cell per
// column. Every cell, the last included, ends in a tab, so tabwriter
// aligns the last column too.
type table[T any] struct {
	// title is the line, or lines, above the table; "" for none.
	title   string
	columns []column[T]
	rows    []T
	// after are the lines under the table (setup notes, first errors).
	after []string
	// left aligns the cells to the left (text); numbers align right.
	left bool
}

// column is one column of a table: its header, "" for an unlabelled one
// (a note such as "3 errors"), and how a row's cell is formatted.
type column[T any] struct {
	head string
	cell func(T) string
}

func (t table[T]) empty() bool { return len(t.rows) == 0 && len(t.after) == 0 }

// write writes t; a table whose columns are all unlabelled has no header
// line.
func (t table[T]) write(w io.Writer) {
	fmt.Fprintln(w)
	if t.title != "" {
		fmt.Fprintln(w, t.title)
	}
	var flags uint
	if !t.left {
		flags = tabwriter.AlignRight
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', flags)
	line := make([]byte, 0, 256)
	labelled := false
	for _, c := range t.columns {
		line = append(append(line, c.head...), '\t')
		labelled = labelled || c.head != ""
	}
	if labelled {
		tw.Write(append(line, '\n'))
	}
	for _, row := range t.rows {
		line = line[:0]
		for _, c := range t.columns {
			line = append(append(line, c.cell(row)...), '\t')
		}
		tw.Write(append(line, '\n'))
	}
	tw.Flush()
	for _, l := range t.after {
		fmt.Fprintln(w, l)
	}
}

// byContender returns the results of the run's contenders, in the order
// of the contender table, that get finds.
func byContender[T any](r *Report, get func(name string) *T) []*T {
	var out []*T
	for _, c := range r.Contenders {
		if x := get(c.Name); x != nil {
			out = append(out, x)
		}
	}
	return out
}
