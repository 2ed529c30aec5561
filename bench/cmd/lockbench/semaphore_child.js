// lockbench's redis-semaphore child (semaphore_node.go writes it next to
// the node_modules where npm installed redis-semaphore and ioredis): the
// semaphore mode's child protocol (handoff_child.go), JSON values one per
// line on stdin and stdout, for the npm package redis-semaphore's
// RedlockSemaphore over one ioredis client per master. Nothing else goes
// to stdout. Times are wall-clock Unix nanoseconds, as the Go children's.
'use strict'

const fs = require('node:fs')
const path = require('node:path')
const readline = require('node:readline')
const { performance } = require('node:perf_hooks')
const Redis = require('ioredis')
const { RedlockSemaphore } = require('redis-semaphore')

const goTimeoutMs = 60000 // handoffGoTimeout

function version(pkg) {
  const file = path.join(__dirname, 'node_modules', pkg, 'package.json')
  return JSON.parse(fs.readFileSync(file, 'utf8')).version
}
const versions = `redis-semaphore ${version('redis-semaphore')}, ioredis ${version('ioredis')}`

// The wall clock in ns: performance.now() (monotonic, sub-microsecond)
// from an anchor on the edges of Date.now()'s milliseconds, taken again
// for every job, so that the children's and the parent's clocks agree to
// tens of microseconds. A late look at an edge (the loop was descheduled)
// makes Date.now() - performance.now() smaller: the largest of five is
// kept.
let anchorNs = 0n
function anchor() {
  let best = -Infinity
  let d0 = Date.now()
  for (let edges = 0; edges < 5;) {
    const p = performance.now()
    const d = Date.now()
    if (d !== d0) {
      best = Math.max(best, d - p)
      d0 = d
      edges++
    }
  }
  anchorNs = BigInt(Math.round(best * 1e6))
}
function nowNs() {
  return anchorNs + BigInt(Math.round(performance.now() * 1e6))
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// Messages from the parent, in order; next() resolves with the next one,
// or null when stdin has ended.
const inbox = []
let waiter = null
let ended = false
const rl = readline.createInterface({ input: process.stdin })
rl.on('line', line => {
  if (line.trim() === '') return
  inbox.push(JSON.parse(line))
  if (waiter) waiter()
})
rl.on('close', () => {
  ended = true
  if (waiter) waiter()
})
async function next(timeoutMs) {
  let timer
  while (inbox.length === 0 && !ended) {
    const arrived = new Promise(resolve => { waiter = resolve })
    if (timeoutMs === undefined) {
      await arrived
    } else {
      const late = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no start within ${timeoutMs / 1000}s`)), timeoutMs)
      })
      try {
        await Promise.race([arrived, late])
      } finally {
        clearTimeout(timer)
      }
    }
    waiter = null
  }
  return inbox.length > 0 ? inbox.shift() : null
}

function send(text) {
  process.stdout.write(text + '\n')
}

// options are RedlockSemaphore's, from the job's Setup: the TTL, the
// per-master timeout (ioredis' commandTimeout) and tries as they are; the
// retry pause, which is fixed here, the mean of the Go contenders'
// (uniform in [RetryDelay/2, RetryDelay]); an acquire timeout past the
// end of the run (the run's end aborts an acquire); no auto-refresh (no
// Go contender renews a permit it holds).
function options(job) {
  const s = job.setup
  return {
    lockTimeout: Math.round(s.TTL / 1e6),
    retryInterval: Math.max(1, Math.round((0.75 * s.RetryDelay) / 1e6)),
    acquireAttemptsLimit: s.Tries > 0 ? s.Tries : Number.POSITIVE_INFINITY,
    acquireTimeout: Math.ceil(job.duration_ns / 1e6) + 1000,
    refreshInterval: 0
  }
}

function connect(job) {
  return job.setup.Addrs.map(addr => {
    const i = addr.lastIndexOf(':')
    const client = new Redis({
      host: addr.slice(0, i),
      port: Number(addr.slice(i + 1)),
      commandTimeout: Math.max(1, Math.round(job.setup.MasterTimeout / 1e6)),
      lazyConnect: false
    })
    client.on('error', () => {}) // a master's error fails its commands; ioredis reconnects
    return client
  })
}

async function serve(job) {
  const opts = options(job)
  const permits = job.setup.Permits
  const clients = connect(job)
  let setupErr = ''
  try {
    const probe = new RedlockSemaphore(clients, job.probe + job.proc, permits, { ...opts, acquireTimeout: 5000 })
    await probe.acquire()
    await probe.release()
  } catch (err) {
    setupErr = 'first lock failed: ' + String(err && err.message ? err.message : err)
  }
  const note = `${versions}: RedlockSemaphore(clients, name, P), acquire(), release(); an ioredis client per master, commandTimeout ${Math.max(1, Math.round(job.setup.MasterTimeout / 1e6))} ms; ` +
    `lockTimeout ${opts.lockTimeout} ms, retryInterval ${opts.retryInterval} ms (fixed), acquireAttemptsLimit ${opts.acquireAttemptsLimit}, refreshInterval 0; ` +
    'a sorted set per master scored by the client\'s clock, a holder needs a majority (as majority-counter)'
  anchor()
  send(JSON.stringify(setupErr ? { err: setupErr } : { note }))
  let go
  try {
    const m = await next(goTimeoutMs)
    if (m === null) throw new Error('stdin ended before the start')
    if (!m.go) throw new Error('expected a start')
    go = m.go
  } finally {
    if (setupErr || !go || go.skip) clients.forEach(c => c.disconnect())
  }
  if (setupErr || go.skip) {
    send('{"events":[],"lock_errors":0,"unlock_errors":0}')
    return
  }
  const start = BigInt(go.start_ns)
  const end = start + BigInt(job.duration_ns)
  const holdMs = job.hold_ns / 1e6
  const out = await run(clients, job, opts, permits, start, end, holdMs)
  clients.forEach(c => c.disconnect())
  send(out)
}

// run runs job.g loops from start until end, each acquiring a permit,
// holding it for holdMs, noting the release and releasing it, and returns
// the child's handoffOut as JSON text (int64 nanoseconds do not fit a JS
// number). An acquire that fails before the end is an error; one cut by
// the end (aborted, or come back after it: released, not counted) is not,
// as a Go Lock call cut by its context.
async function run(clients, job, opts, permits, start, end, holdMs) {
  const wait = Number(start - nowNs()) / 1e6
  if (wait > 0) await sleep(wait)
  const stop = new AbortController()
  const timer = setTimeout(() => stop.abort(), Math.max(0, Number(end - nowNs()) / 1e6))
  const events = []
  let lockErrors = 0
  let unlockErrors = 0
  let firstError = ''
  const noteError = err => {
    if (!firstError) firstError = String(err && err.message ? err.message : err)
  }
  const loop = async g => {
    while (!stop.signal.aborted && nowNs() < end) {
      const began = nowNs()
      const sem = new RedlockSemaphore(clients, job.key, permits, opts)
      try {
        await sem.acquire(stop.signal)
      } catch (err) {
        if (!stop.signal.aborted && nowNs() < end) {
          lockErrors++
          noteError(err)
        }
        continue
      }
      const acquired = nowNs()
      if (acquired >= end) { // a Go Lock call would have been cut by the end
        await sem.release().catch(() => {})
        break
      }
      if (holdMs > 0) await sleep(holdMs)
      await new Promise(resolve => setImmediate(resolve)) // let the other loops run
      const released = nowNs()
      try {
        await sem.release()
      } catch (err) {
        unlockErrors++
        noteError(err)
      }
      events.push(`[${g},${began},${acquired},${released}]`)
    }
  }
  const loops = []
  for (let g = 0; g < job.g; g++) loops.push(loop(g))
  await Promise.all(loops)
  clearTimeout(timer)
  let text = `{"events":[${events.join(',')}],"lock_errors":${lockErrors},"unlock_errors":${unlockErrors}`
  if (firstError) text += `,"first_error":${JSON.stringify(firstError)}`
  return text + '}'
}

async function main() {
  for (;;) {
    const m = await next()
    if (m === null) return 0
    if (!m.job) {
      process.stderr.write('lockbench redis-semaphore child: expected a job\n')
      return 2
    }
    await serve(m.job)
  }
}

main().then(
  code => process.exit(code),
  err => {
    process.stderr.write('lockbench redis-semaphore child: ' + (err && err.stack ? err.stack : err) + '\n')
    process.exit(1)
  }
)
