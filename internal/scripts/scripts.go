package scripts

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strconv"
	"strings"
)

// Script is one Lua script.
type Script struct {
	// Name is the script's file name without ".lua", such as
	// "release_quiet".
	Name string
	// Source is the script's text, as sent with EVAL and SCRIPT LOAD.
	Source string
	// SHA is the lower-case hex SHA-1 of Source, the name Redis gives the
	// script, as sent with EVALSHA.
	SHA string
}

// ReleasedChannelPrefix starts the shard channel on which the release
// scripts wake a key's waiters: the prefix followed by the key. It is
// defined here alone: the scripts' files name it "$RELEASED", which load
// replaces, and the lock layer and the fake master subscribe with it.
const ReleasedChannelPrefix = "volley:released:"

// WaitersSuffix follows a key in the name of its waiters' sorted set (see
// LockWait and Release), which the scripts make from KEYS[1]: the files
// name it "$WAITERS". The set is not among the scripts' declared KEYS, so
// that a release stays a one-key command (a cluster answers a command on
// several keys in a slot under migration with TRYAGAIN unless all of them
// are there); made from the key, it is in the key's slot.
const WaitersSuffix = ":volley:waiters"

// NamedSuffix follows a key in the name of the key that holds, for NamedMs
// after a release (see Release), the id of the Client it took off the
// key's waiters: meanwhile the other Clients' waiting attempts
// (LockWait) leave the free key to it. Made from the key, as
// WaitersSuffix, it is in the key's slot. The scripts' files name it
// "$NAMED".
const NamedSuffix = ":volley:named"

// ListenSuffix follows a key in the name of the mark that every Client
// waiting for the key (among its waiters or not: a fenced or multi-key
// Lock, a read-write lock's writer or reader, a Client whose ACL refuses
// the waiters' set) leaves on it at each attempt that finds it taken: a
// string with the waiters' TTL (the key's PTTL plus the attempt's TTL).
// A release that finds no mark (the uncontended case) publishes nothing
// (see Release). Made from the key, as WaitersSuffix, it is in the key's
// slot. The scripts' files name it "$LISTEN".
const ListenSuffix = ":volley:listen"

// NamedMs is how long a release's named Client has the key to itself
// among waiting Clients (see NamedSuffix): long enough for its wake-up
// and attempt under load, and as long as the other waiters defer to a
// named Client that crashed. Fresh attempts (SET NX) never defer. The
// scripts' files name it "$NAMEDMS".
const NamedMs = 200

//go:embed *.lua
var files embed.FS

// load reads name.lua: its code on one line (see oneLine), with
// "$RELEASED" replaced by ReleasedChannelPrefix, "$WAITERS" by
// WaitersSuffix, "$NAMED" by NamedSuffix, "$NAMEDMS" by NamedMs and
// "$LISTEN" by ListenSuffix, and
// its SHA-1. A missing file, or a comment after code, is a build mistake:
// it panics.
func load(name string) Script {
	b, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic("scripts: " + err.Error())
	}
	src := strings.ReplaceAll(oneLine(name, string(b)), "$RELEASED", ReleasedChannelPrefix)
	src = strings.ReplaceAll(src, "$WAITERS", WaitersSuffix)
	src = strings.ReplaceAll(src, "$NAMEDMS", strconv.Itoa(NamedMs))
	src = strings.ReplaceAll(src, "$NAMED", NamedSuffix)
	src = strings.ReplaceAll(src, "$LISTEN", ListenSuffix)
	sum := sha1.Sum([]byte(src))
	return Script{Name: name, Source: src, SHA: hex.EncodeToString(sum[:])}
}

// The single-key scripts. Lua runs atomically on the master, so each is a
// compare-and-act on the lock's token: a key is the lock's only if it holds
// the token.
var (
	// Release deletes KEYS[1] if it holds the token ARGV[1], then wakes
	// its waiters: it publishes (SPUBLISH) the release's id, ARGV[2] (the
	// first 16 hex digits of the token's SHA-1, which the Client
	// computes: the token itself never leaves the master) to the Client
	// that has waited longest, which it takes off the key's waiters (see
	// LockWait and WaitersSuffix) and names on the key for NamedMs (see
	// NamedSuffix), on that Client's channel of the key: the shard channel
	// ReleasedChannelPrefix, the key, a colon and the Client's id. When
	// the key has no mark (see ListenSuffix; one EXISTS, first), nobody
	// waits: it publishes nothing. When no Client
	// is among the waiters (or an ACL forbids ZPOPMIN), it publishes on
	// the key's channel, ReleasedChannelPrefix followed by the key, which
	// every waiting Client hears. Both are in the key's slot on a cluster, and
	// an ACL that allows the key's channel (&volley:released:<keys>*)
	// allows the Clients' channels. So one release reaches one Client of
	// a fleet, not all. It returns 1, else 0. With an ARGV[3], a turn's
	// cutoff in unix milliseconds (see redlock's turns.go), it wakes
	// nobody and returns 3 when the Client that has waited longest joined
	// after the cutoff; it returns 2 when it woke one, 1 when none waits.
	// It touches the waiters and publishes with redis.pcall, so that an
	// ACL that forbids EXISTS, ZPOPMIN or SPUBLISH costs the waiters their
	// retry delay, not the release.
	Release = load("release")
	// ReleaseQuiet is Release without the wake-up: it deletes KEYS[1] if
	// it holds ARGV[1] and returns 1, else 0. It releases a failed
	// attempt: waiters learn how to go on from their own attempts, not
	// from the release of a loser's partial votes. With ARGV[2] (a TTL in
	// milliseconds) and ARGV[3] (a waiting attempt's enrolment, as
	// LockWait's), a release that deletes the key also puts the Client
	// back among the key's waiters, which the attempt took it off where
	// it set the key (see redlock's waiters.go).
	ReleaseQuiet = load("release_quiet")
	// Extend sets KEYS[1]'s TTL to ARGV[2] milliseconds if it holds the
	// token ARGV[1] and returns PEXPIRE's reply (1), else 0. It never
	// re-creates a missing key.
	Extend = load("extend")
	// Handover passes a key from one holder to the next: if KEYS[1] holds
	// the releasing holder's token ARGV[1], it sets it to the next
	// holder's token ARGV[2] with a TTL of ARGV[3] milliseconds and
	// returns 1; else it changes nothing and returns 0. It never re-creates
	// a missing key, and it publishes nothing: the key is not released.
	Handover = load("handover")
	// LockWait is the attempt of a Lock that waits: SET NX PX, and when
	// the key is taken, what a waiter needs to know. ARGV[3], when
	// present, enrolls a Client, "<score>:<id>". If KEYS[1] does not
	// exist and no release named another Client in the last NamedMs (see
	// NamedSuffix), it sets it to the token ARGV[1] with a TTL of ARGV[2]
	// milliseconds, takes the Client off the key's waiters (see
	// WaitersSuffix) and its name off the key, and returns 1. Otherwise
	// id joins the waiters (a sorted set) with that score (when its call
	// first waited, in the Client's unix ms: the same on every master, so
	// that they agree on the order) unless it is there already, and it
	// returns who has the key and for how long, an array of a bulk string
	// and an integer: the holder's id (the first 16 hex digits of the
	// SHA-1 of the key's value) and the key's PTTL, the waiters' TTL then
	// becoming that PTTL plus ARGV[2] (the name is read only for a free
	// key: a taken one's is left to expire, or to the next release); or,
	// for a free key named for another Client, the same digits of that
	// Client's id and how long the name lasts, the waiters' TTL then
	// ARGV[2]. A key that holds a semaphore's record fails with
	// WRONGKIND. It touches the waiters, and reads the name, with
	// redis.pcall: an ACL that forbids those commands costs only the
	// waking of one Client per release (deleting the name of a key it
	// takes uses redis.call).
	LockWait = load("lock_wait")
	// Leave takes a Client, ARGV[1], off KEYS[1]'s waiters (ZREM, and
	// returns its reply), unless KEYS[1] holds a string whose SHA-1
	// begins with ARGV[2], the id of the release that woke the Client:
	// that release has yet to run on this master, and will take the
	// Client off and name it there, as on the masters where it ran
	// first; then it returns 0. An empty ARGV[2] always leaves. It reads
	// and removes with redis.pcall.
	Leave = load("leave")
	// Wake is what a release that woke nobody (Release with a cutoff
	// answering 3) sends later, when its Client did not take the key
	// back: if KEYS[1] does not exist, it wakes the key's longest waiter
	// as Release does (with the release id of the token ARGV[1]) and
	// returns 1; else it returns 0.
	Wake = load("wake")
)

// The multi-key scripts: one lock on several keys, all or none on each
// master, atomically. Every key gets the same token and the same TTL, so
// the keys of one lock live and die together.
var (
	// LockMulti sets every key to the token ARGV[1] with a TTL of ARGV[2]
	// milliseconds and returns 1, only if none of them exists; else it
	// returns the first existing key's holder id and PTTL, as LockWait
	// does, and changes nothing (a key that holds a semaphore's record
	// fails with WRONGKIND).
	LockMulti = load("lock_multi")
	// ReleaseMulti deletes every key that holds the token ARGV[1] and
	// publishes the release's id on each deleted key's channel (as
	// Release does when no Client waits; it names no waiter). It returns
	// 1 if every key held it, else 0.
	ReleaseMulti = load("release_multi")
	// ReleaseMultiQuiet is ReleaseMulti without the wake-up (see
	// ReleaseQuiet).
	ReleaseMultiQuiet = load("release_multi_quiet")
	// ExtendMulti sets every key's TTL to ARGV[2] milliseconds and returns
	// 1, only if every key holds the token ARGV[1]; else it returns 0. It
	// never re-creates a missing key.
	ExtendMulti = load("extend_multi")
	// ExtendBatch extends many locks in one call, each on its own terms:
	// ARGV[1] is the number of locks; then, per lock, its token, its TTL
	// in milliseconds and how many of KEYS are its keys, taken in order. A
	// lock is extended, and its entry of the reply is 1, only if every one
	// of its keys holds its token (it never re-creates a key); else its
	// entry is 0. The reply is an array with one entry per lock.
	ExtendBatch = load("extend_batch")
)

// The scripts of fencing. Every master keeps one fencing counter, a
// decimal string, for all keys and all clients ("volley:fence"); the
// run_id under which it last vouched for it (the run key,
// "volley:fence:run"); and, while it has no counter it vouches for, the
// unsure hash ("volley:fence:unsure") of since, the master's TIME in
// microseconds when it noticed, and stale, the counter it had then, if
// any. Counters are compared as Lua compares numbers, as doubles.
var (
	// FenceCheck runs in every connection's handshake. KEYS: the counter,
	// the run key, the unsure hash. If the run key holds this master
	// process's run_id (from INFO server), the counter was vouched for
	// under it: nothing changes, and it returns 1. Else the process
	// restarted since (or never had a counter), and whatever counter it
	// has may be older than what it once acknowledged (a snapshot, a lost
	// AOF tail, or nothing): it moves the counter, if any, to the hash's
	// stale field (unless stale is already at least as large), sets since
	// to TIME in microseconds, sets the run key to the run_id and returns
	// 0. Without a run_id in INFO it fails with an error.
	FenceCheck = load("fence_check")
	// FenceLock is a fenced Lock's first round, and in the common case its
	// only one: LockMulti over all of KEYS but the last, which is the
	// counter. If a key exists it returns that key's holder id and PTTL;
	// else it sets the keys to the token ARGV[1] with a TTL of ARGV[2]
	// milliseconds and, if there is a counter, raises it to the proposed
	// token ARGV[3] when that is larger (never lowering it) and returns
	// {1, counter}, the counter as it was before; with no counter it
	// returns {1} and writes none. A key that holds a semaphore's record
	// fails with WRONGKIND.
	FenceLock = load("fence_lock")
	// FenceWrite is a fenced Lock's second round. It returns 0 if one of
	// KEYS but the last does not hold the token ARGV[1]; else 2 if there is
	// no counter (the last of KEYS); else it raises the counter to ARGV[2]
	// (never lowers it) and returns 1.
	FenceWrite = load("fence_write")
	// FenceState is a repair's first look. KEYS: the counter, the unsure
	// hash. It returns {counter, since, stale, now}, four bulk strings, ""
	// for what is missing; now is TIME in microseconds. A master with
	// neither a counter nor a since lost both without a restart (FLUSHALL,
	// an eviction): it first sets since to now, becoming unsure as
	// FenceCheck would have made it.
	FenceState = load("fence_state")
	// FenceRepair gives an unsure master its counter back. KEYS: the
	// counter, the unsure hash; ARGV: the since the repair saw, the value.
	// An existing counter is raised to the value (never lowered), and it
	// returns 1. With no counter, if the hash's since is still ARGV[1] it
	// sets the counter to the value, deletes the hash and returns 1; a
	// master that restarted again meanwhile is left alone, and it returns
	// 0.
	FenceRepair = load("fence_repair")
)

// The fencing scripts over a Redis Cluster. There a slot's node changes
// without the connection knowing (a failover, a migration), so the check
// that FenceCheck makes per connection is made per slot, in the same step
// as the fencing script itself: each of these is the prelude
// fence_vouch.lua followed by the script, and takes the script's own KEYS
// followed by the counter, the run key and the unsure hash of its slot.
// The prelude takes those three off KEYS; if the run key does not hold
// the node's identity (its run_id and master_replid), it sets the counter
// aside as FenceCheck does, and the script then runs as on a master that
// has no counter it vouches for. The run key holds that identity, not the
// run_id alone as FenceCheck's does: the two kinds of key never meet (a
// cluster's keys carry a slot's tag).
var (
	FenceLockVouched   = vouched(FenceLock)
	FenceWriteVouched  = vouched(FenceWrite)
	FenceStateVouched  = vouched(FenceState)
	FenceRepairVouched = vouched(FenceRepair)
	SemAcquireVouched  = vouched(SemAcquire)
	RWLockVouched      = vouched(RWLock)
)

// oneLine returns a .lua file's code as the line that is sent to the
// masters: its comment lines (those that begin with "--" once indented)
// and blank lines dropped, each other line trimmed, joined by single
// spaces. Lua needs no line break between statements, so the code runs
// as written; the masters get a third of the bytes, and an error a
// script raises names line 1, whatever line of the file it is on. A
// comment after code on the same line would swallow the code joined after
// it: it panics.
func oneLine(name, file string) string {
	var code []string
	for line := range strings.Lines(file) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		if strings.Contains(line, "--") {
			panic("scripts: " + name + ".lua: a comment after code: " + line)
		}
		code = append(code, line)
	}
	return strings.Join(code, " ")
}

// vouched returns s with fence_vouch.lua's prelude before it, named
// "fence_vouch+" and s's name.
func vouched(s Script) Script {
	prelude := load("fence_vouch")
	src := prelude.Source + " " + s.Source
	sum := sha1.Sum([]byte(src))
	return Script{Name: prelude.Name + "+" + s.Name, Source: src, SHA: hex.EncodeToString(sum[:])}
}

// The scripts of a semaphore of P permits. Its keys on a master are the
// semaphore's record, KEYS[1] (its name), holding "semaphore:" followed by
// P in decimal, and its P permits' keys, KEYS[2] to KEYS[P+1], each a
// lock's key holding its holder's token. The record lives as long as its
// longest-lived permit, and no longer than the last one's release: it is
// what tells a semaphore from a lock of the same name, and P from
// another number of permits.
var (
	// SemAcquire takes one permit: KEYS are the record and every permit's
	// key, ARGV the token, the TTL in milliseconds and the index (from 0)
	// of the permit wanted. If the record holds another value, it changes
	// nothing and fails with an error: "PERMITS <name> has <p> permits,
	// not <P>" for a semaphore of another size, "WRONGKIND <name> is a
	// lock, not a semaphore" for anything else (a hash or other type fails
	// with WRONGTYPE). Else, if the permit's key does not exist, it sets
	// it to the token with the TTL, makes the record's TTL at least as
	// long (writing it if missing) and returns the token (a grant that
	// names its request: no other answer, corrupted or another request's,
	// reads as this one's grant); else it returns the indexes of the
	// permits whose keys do not exist, an array of integers (empty when
	// all are taken). Fenced, it takes a fourth argument, the proposed
	// token, and the fencing counter's key after the permits' (so P is
	// #KEYS-2): when it sets the permit it then answers {token, counter}
	// having raised the counter to the proposal if that is larger (as
	// FenceLock), or {token, ""} when there is no counter.
	SemAcquire = load("sem_acquire")
	// SemRelease gives a permit back: KEYS are the record and every
	// permit's key, ARGV the token, the permit's index and "1" to wake
	// waiters or "0" not to. If the permit's key holds the token, it
	// deletes it, deletes the record when no permit's key is left, and,
	// with "1", publishes the release's id (as Release does) on the shard
	// channel ReleasedChannelPrefix followed by the record's key; it returns
	// 1. Else it changes nothing and returns 0.
	SemRelease = load("sem_release")
	// SemExtend extends a permit: KEYS are the record and the permit's
	// key, ARGV the token, the TTL in milliseconds and P. If the permit's
	// key holds the token, it sets its TTL, makes the record's TTL at
	// least as long when the record is this semaphore's (writing it if
	// missing; a record that holds anything else is left alone) and
	// returns 1; else it returns 0. It never re-creates a permit's key.
	SemExtend = load("sem_extend")
	// SemExtendBatch is SemExtend for many permits in one call: ARGV[1]
	// is the number of permits; then, per permit, SemExtend's three
	// arguments (the token, the TTL in milliseconds and P), and two of
	// KEYS, SemExtend's (the record and the permit's key), taken in
	// order. The reply is an array with SemExtend's answer per permit.
	SemExtendBatch = load("sem_extend_batch")
)

// The scripts of a read-write lock. Its keys on a master, KEYS[1] to
// KEYS[3] of each script, are the writer's key (its name: a lock's key,
// holding the writer's token, so that the writer's lock is extended and
// released by Extend and Release), the readers (name+":readers", a sorted
// set of the readers' tokens, each scored by its expiry in milliseconds
// on the master's clock, TIME) and the intent (name+":intent", present
// while a writer waits for readers to leave: new readers are refused
// then). A reader whose score has passed holds nothing; the scripts drop
// such readers as they meet them (a reader expires when the master's
// time reaches its score). The readers' key lives at least as long as its
// longest-lived reader; the intent, as long as the TTL of the latest
// waiting writer's attempt that found readers.
var (
	// RWLock is a writer's attempt: ARGV the token, the TTL in
	// milliseconds and "1" for a writer that waits, "0" for one that does
	// not. If the writer's key exists it returns its holder's id and PTTL
	// (as LockWait). Else, after dropping expired readers, if readers
	// remain it returns {"0000000000000000", how long until the last
	// reader expires}, having made, for a writer that waits, the intent's
	// TTL at least the TTL (writing it if missing). Else it sets the
	// writer's key to the token with the TTL, deletes the intent and
	// returns 1. Fenced, it takes a fourth key, the fencing counter's, and
	// a fourth argument, the proposed token, and then answers as FenceLock
	// does once it set the writer's key. A writer's key that holds a
	// semaphore's record fails with WRONGKIND.
	RWLock = load("rw_lock")
	// RWRLock is a reader's attempt: ARGV the token and the TTL in
	// milliseconds. If the writer's key exists it returns its holder's id
	// and PTTL; else if the intent exists, {"0000000000000000", the
	// intent's PTTL}. Else it drops expired readers, adds the token with
	// the master's time plus the TTL as its score, makes the readers'
	// key's TTL at least the TTL and returns 1. A writer's key that holds
	// a semaphore's record fails with WRONGKIND.
	RWRLock = load("rw_rlock")
	// RWRExtend extends a reader: ARGV the token and the TTL in
	// milliseconds; KEYS[1], the writer's key, is not read. If the token is a reader that has not expired, it
	// moves its expiry to the master's time plus the TTL, makes the
	// readers' key's TTL at least that long and returns 1; else 0.
	RWRExtend = load("rw_rextend")
	// RWRExtendBatch is RWRExtend for many readers in one call: ARGV[1]
	// is the number of readers; then, per reader, the token, the TTL in
	// milliseconds and a third argument it ignores, and one of KEYS, the
	// readers' key, taken in order. The reply is an array with
	// RWRExtend's answer per reader.
	RWRExtendBatch = load("rw_rextend_batch")
	// RWRUnlock releases a reader: ARGV the token. If the token is a
	// reader it removes it; if it had not expired, it also publishes the
	// release's id (as Release does) on the shard channel
	// ReleasedChannelPrefix followed by the writer's key, and returns 1.
	// Else it returns 0.
	RWRUnlock = load("rw_runlock")
)

// The scripts of an election (see redlock's Election). Its keys on a
// master are its name, KEYS[1], a lock's key holding the leader's token
// (taken by FenceLock, as a fenced Lock's), and the leader's record,
// KEYS[2] (name+":leader"), holding the leader's term in decimal, a
// space and its value: what followers read. The record lives exactly as
// long as the leader's key: written with the key's PTTL, extended and
// deleted with it.
var (
	// ElectAnnounce writes the record of the leader that holds KEYS[1]:
	// ARGV the token and the record. If KEYS[1] holds the token with
	// time left (a PTTL above 0), it sets
	// KEYS[2] to the record with KEYS[1]'s PTTL, publishes
	// "leader-announced" (not a release's id: those are hex digits) on the
	// shard channel "volley:released:" followed by KEYS[1], and returns 1;
	// else it returns 0 and changes nothing.
	ElectAnnounce = load("elect_announce")
	// ElectExtendBatch extends many leaders in one call, as ExtendBatch
	// does locks (the same arguments), but a leader's first key alone must
	// hold its token: its record, the second, holds the record. The reply
	// is an array with 1 (extended) or 0 per leader.
	ElectExtendBatch = load("elect_extend_batch")
	// ElectRelease ends a leadership: ARGV the token and "1" to wake
	// waiters or "0" not to. If KEYS[1] holds the token, it deletes
	// KEYS[1] and the record, KEYS[2], publishes with "1" the release's id
	// as Release does, and returns 1; else it returns 0 and changes
	// nothing.
	ElectRelease = load("elect_release")
)

// All is every script, one entry each.
var All = []Script{
	Release, ReleaseQuiet, Extend, Handover, LockWait, Leave, Wake,
	LockMulti, ReleaseMulti, ReleaseMultiQuiet, ExtendMulti, ExtendBatch,
	FenceCheck, FenceLock, FenceWrite, FenceState, FenceRepair,
	SemAcquire, SemRelease, SemExtend, SemExtendBatch,
	RWLock, RWRLock, RWRExtend, RWRExtendBatch, RWRUnlock,
	FenceLockVouched, FenceWriteVouched, FenceStateVouched, FenceRepairVouched,
	SemAcquireVouched, RWLockVouched,
	ElectAnnounce, ElectExtendBatch, ElectRelease,
}
