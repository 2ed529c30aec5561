package main

import (
	"fmt"
	"strconv"
	"strings"
)

// The masters' own counters, from the text of an INFO reply: the modes
// that read them (throughput and native: the masters' CPU and command
// time; cluster: each primary's share of the lock commands; fleet: the
// commands and connections of a window) parse them here.

// infoFields returns the "name:value" lines of an INFO reply by name;
// section headers and blank lines are left out.
func infoFields(text string) map[string]string {
	fields := map[string]string{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// commandStat is one command's line of INFO commandstats
// (cmdstat_NAME:calls=...,usec=...,rejected_calls=...). A script's inner
// calls are counted under their own commands.
type commandStat struct {
	Calls    int64   // executions, those that failed included
	Rejected int64   // refused before execution (rejected_calls; 0 before Redis 7)
	Usec     float64 // the time the executions took
}

// commandStats returns the commandstats lines of an INFO reply by command
// name, lower case, without "cmdstat_". A reply without that section
// gives none.
func commandStats(text string) (map[string]commandStat, error) {
	stats := map[string]commandStat{}
	for k, v := range infoFields(text) {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		var st commandStat
		for _, f := range strings.Split(v, ",") {
			key, val, _ := strings.Cut(f, "=")
			var err error
			switch key {
			case "calls":
				st.Calls, err = strconv.ParseInt(val, 10, 64)
			case "rejected_calls":
				st.Rejected, err = strconv.ParseInt(val, 10, 64)
			case "usec":
				st.Usec, err = strconv.ParseFloat(val, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("INFO commandstats: %s:%s: %w", k, v, err)
			}
		}
		stats[name] = st
	}
	return stats, nil
}
