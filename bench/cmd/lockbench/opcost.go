package main

import "time"

// OpCost is what one Lock+Unlock cost this process, on average over a
// measurement: CPU time (user + system), read and write system calls, and
// context switches. The masters' own cost is not in it (they are other
// processes), unless they are the in-process fakes. A figure this
// platform does not give is -1.
type OpCost struct {
	CPUUs    float64 `json:"cpu_us"`
	IOCalls  float64 `json:"io_calls"`
	Switches float64 `json:"context_switches"`
	// MasterCPUUs is the masters' CPU per operation over the same
	// window (INFO cpu, summed over the masters), and ClientPerMaster
	// this process's CPU over the masters': on a machine the client
	// shares with the masters, the process's CPU per operation follows
	// how much of the machine it gets, while this ratio holds still
	// when the machine as a whole runs slower or faster (see
	// docs/benchmarks.md). -1 when not measured (in-process fakes, a
	// master that does not answer INFO).
	MasterCPUUs     float64 `json:"master_cpu_us"`
	ClientPerMaster float64 `json:"client_per_master"`
}

// costMeter is a snapshot of this process's counters.
type costMeter struct {
	cpu                   time.Duration
	calls, switches       int64
	cpuOK, callsOK, swsOK bool
}

// meterCost reads this process's counters.
func meterCost() costMeter {
	var m costMeter
	m.cpu, m.cpuOK = processCPU()
	m.calls, m.callsOK = ioCalls()
	m.switches, m.swsOK = contextSwitches()
	return m
}

// since returns the cost per operation of ops operations made between
// start and m.
func (m costMeter) since(start costMeter, ops int64) OpCost {
	c := OpCost{CPUUs: -1, IOCalls: -1, Switches: -1, MasterCPUUs: -1, ClientPerMaster: -1}
	if ops <= 0 {
		return c
	}
	n := float64(ops)
	if m.cpuOK && start.cpuOK {
		c.CPUUs = float64((m.cpu - start.cpu).Microseconds()) / n
	}
	if m.callsOK && start.callsOK {
		c.IOCalls = float64(m.calls-start.calls) / n
	}
	if m.swsOK && start.swsOK {
		c.Switches = float64(m.switches-start.switches) / n
	}
	return c
}

// medianCost is the median of each figure over rounds.
func medianCost(rounds []OpCost) OpCost {
	get := func(f func(OpCost) float64) float64 {
		var xs []float64
		for _, r := range rounds {
			if v := f(r); v >= 0 {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			return -1
		}
		return median(xs)
	}
	return OpCost{
		CPUUs:    get(func(c OpCost) float64 { return c.CPUUs }),
		IOCalls:  get(func(c OpCost) float64 { return c.IOCalls }),
		Switches: get(func(c OpCost) float64 { return c.Switches }),

		MasterCPUUs:     get(func(c OpCost) float64 { return c.MasterCPUUs }),
		ClientPerMaster: get(func(c OpCost) float64 { return c.ClientPerMaster }),
	}
}

// withMasters adds the masters' CPU over the window (the counters read
// before and after it) to c, a cost of ops operations.
func (c OpCost) withMasters(before, after masterCounters, ops int64) OpCost {
	if !before.ok || !after.ok || ops <= 0 || after.cpuUs <= before.cpuUs {
		return c
	}
	c.MasterCPUUs = (after.cpuUs - before.cpuUs) / float64(ops)
	if c.CPUUs >= 0 {
		c.ClientPerMaster = c.CPUUs / c.MasterCPUUs
	}
	return c
}
