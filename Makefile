# Volley's build entry points. Every target works on a fresh Debian machine
# with Go: `make test` installs redis-server when it is missing (and apt-get
# can), and every test starts and stops its own servers on 127.0.0.1
# ephemeral ports.

GO             ?= go
FUZZTIME       ?= 60s
# The smoke pass counts executions instead of timing them: with a duration,
# Go 1.26's fuzz coordinator can report a bare "context deadline exceeded"
# failure at the deadline on a busy machine (golang/go#75804, fixed in Go
# 1.27); a count has no deadline to race. 1000 runs of the slowest target,
# FuzzConnReplies, take about 5 s here.
SMOKE_FUZZTIME ?= 1000x
TORTURE_TIME   ?= 10m
SEED           ?=
REDIS_PORTS    ?= 7001 7002 7003 7004 7005
REDIS_DIR      ?= .redis
CLUSTER_UP_PORTS  ?= 7011 7012 7013 7014 7015 7016
SENTINEL_UP_PORTS ?= 7021 7022 7023
SENTINEL_PORTS    ?= 7031 7032 7033
# staticcheck, pinned: run from the module proxy at this version, so that
# neither module's go.mod carries it.
STATICCHECK    ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Modules of their own: the benchmarks and the telemetry adapters, so that
# the library's go.mod stays lean.
SUBMODULES     ?= bench redlockotel redlockprom

# Servers. SYSTEM_SERVERS are the machine's own, which deps installs:
# Debian bookworm's redis-server 7.0 (the oldest supported) and
# bookworm-backports' valkey-server 8.0. SERVERS are newer ones, each
# KIND-VERSION@SUITE from a newer Debian suite, which
# scripts/install-servers.sh unpacks into SERVERS_DIR/KIND-VERSION with
# wrappers that run them on their own libc (they need glibc 2.38, bookworm
# has 2.36); nothing is installed on the system. SERVERS_NEWEST are the
# newest Redis and Valkey, the ones make test runs on besides Redis 7.0;
# test-servers runs on all of them. Each name is also what the pass checks
# the server to be: the kind, and the version as a prefix (7.0 matches
# 7.0.15).
SYSTEM_SERVERS ?= redis-7.0 valkey-8.0
SERVERS_NEWEST ?= redis-8.6.3@experimental valkey-9.1.2@forky
SERVERS        ?= valkey-8.1.1@trixie redis-8.0.2@trixie redis-8.0.6@forky $(SERVERS_NEWEST)
SERVERS_DIR    ?= .servers
# The go test flags of one server's pass (pass-KIND-VERSION).
PASS_FLAGS     ?= -race -shuffle=on -count=1 -timeout 8m
# The passes (KIND-VERSION) whose redlock tests send every round the
# Group's driver may serve to it (VOLLEY_DRIVEN=1, see redlock's TestMain),
# as a busy Client does; the others take a lone caller's claim when the
# sockets are free, as most rounds of a test do. make test's Valkey pass
# is driven, its Redis passes are not, so both paths run on native forms.
DRIVEN_PASSES  ?= valkey-9.1.2
# KIND-VERSION of each KIND-VERSION@SUITE; the KIND and the VERSION of one.
names   = $(foreach s,$(1),$(firstword $(subst @, ,$(s))))
kind    = $(firstword $(subst -, ,$(1)))
version = $(lastword $(subst -, ,$(1)))

# test-stress: how many times the unit suite must pass under CPU hogs in a row.
STRESS_RUNS    ?= 3

.PHONY: all test test-stress test-servers servers servers-newest deps vet cross staticcheck fmt-check unit unit-allocs unit-bench fuzz-smoke bench bench-go bench-go-compare fuzz torture torture-cluster torture-semaphore torture-rw torture-election torture-rotation failover-loop soak-do cover lint redis-up redis-down cluster-up cluster-down sentinel-up sentinel-down stop-pids

all: test

## deps: install redis-server and valkey-server when they are missing and
## apt-get is available (as root). valkey-server comes from Debian's
## backports suite when the release itself has none (bookworm): the suite
## is added as a source line on the archive the machine already uses. A C
## compiler (lockbench's floor-c, and its tests) is installed the same way
## (gcc); where it cannot be, deps says so and goes on: lockbench then
## reports floor-c as not measured, and floor-c's tests fail.
deps:
	@if cc=$$(command -v cc || command -v gcc || command -v clang); then \
		echo "deps: C compiler $$cc"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "deps: installing gcc with apt-get"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null; } || \
			echo "deps: apt-get could not install gcc: lockbench's floor-c is not measured and its tests fail" >&2; \
	else \
		echo "deps: no C compiler (cc, gcc or clang): lockbench's floor-c is not measured and its tests fail; install one (Debian/Ubuntu: apt-get install -y gcc)" >&2; \
	fi
	@if command -v redis-server >/dev/null 2>&1; then \
		echo "deps: $$(redis-server --version | cut -d' ' -f1-3)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "deps: installing redis-server with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	else \
		echo "deps: redis-server is missing; install it (Debian/Ubuntu: apt-get install -y redis-server)" >&2; exit 1; \
	fi
	@if command -v valkey-server >/dev/null 2>&1; then \
		echo "deps: $$(valkey-server --version | cut -d' ' -f1-3)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "deps: installing valkey-server with apt-get"; \
		apt-get update -qq; \
		if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valkey-server >/dev/null 2>&1; then \
			. /etc/os-release; \
			uri=$$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *//p' | grep -v security | head -n 1); \
			[ -n "$$uri" ] || uri=$$(grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | grep -v security | awk '{print $$2}' | head -n 1); \
			echo "deps: adding $$VERSION_CODENAME-backports for valkey-server"; \
			echo "deb $$uri $$VERSION_CODENAME-backports main" > /etc/apt/sources.list.d/volley-backports.list; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t "$$VERSION_CODENAME-backports" valkey-server >/dev/null; \
		fi; \
	else \
		echo "deps: valkey-server is missing; install it (Debian bookworm: apt-get install -t bookworm-backports valkey-server)" >&2; exit 1; \
	fi

## servers: install every server of SERVERS into SERVERS_DIR (about 35 s
## the first time, with the network to the Debian archive the machine's apt
## uses; nothing after), printing each one's --version.
servers:
	@bash scripts/install-servers.sh $(SERVERS_DIR) $(SERVERS)

## servers-newest: the same for SERVERS_NEWEST alone, which make test needs.
servers-newest:
	@bash scripts/install-servers.sh $(SERVERS_DIR) $(SERVERS_NEWEST)

## test: vet (also for darwin and windows), staticcheck, format check, all
## tests with the race detector, fuzz smoke.
test: deps servers-newest vet cross staticcheck fmt-check unit

## test-servers: the real-server tests of internal/pipe, redlock and the launchers
## (standalone, Cluster, Sentinel) on every server: SYSTEM_SERVERS, then
## SERVERS, one after the other (about 2 minutes each), each pass checked
## to be the server it names; a summary of the passes that failed at the end.
test-servers: deps servers
	@failed=; for s in $(SYSTEM_SERVERS) $(call names,$(SERVERS)); do \
		$(MAKE) --no-print-directory pass-$$s || failed="$$failed $$s"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-servers: failed on$$failed" >&2; exit 1; fi; \
	echo "test-servers: passed on $(SYSTEM_SERVERS) $(call names,$(SERVERS))"

## pass-KIND-VERSION: the real-server tests of internal/pipe, redlock and the
## launchers on one server of SYSTEM_SERVERS (from PATH) or of SERVERS
## (from SERVERS_DIR), with VOLLEY_EXPECT_SERVER and VOLLEY_EXPECT_VERSION
## set from its name, so that the tests fail on any other server.
pass-%:
	@kind=$(call kind,$*); version=$(call version,$*); \
	case " $(SYSTEM_SERVERS) " in \
		*" $* "*) bin=$$kind-server ;; \
		*) bin=$(CURDIR)/$(SERVERS_DIR)/$*/bin/$$kind-server ;; \
	esac; \
	driven=$(if $(filter $*,$(DRIVEN_PASSES)),1); \
	echo "pass: $$kind $$version: $$($$bin --version)$${driven:+ (every round on the driver)}"; \
	REDIS_SERVER=$$bin VOLLEY_EXPECT_SERVER=$$kind VOLLEY_EXPECT_VERSION=$$version VOLLEY_DRIVEN=$$driven \
		$(GO) test $(PASS_FLAGS) ./internal/pipe ./redlock ./internal/redistest

vet:
	$(GO) vet ./...
	@for m in $(SUBMODULES); do echo "vet: $$m"; (cd $$m && $(GO) vet ./...) || exit 1; done

## cross: vet both modules and build every test binary for darwin and
## windows (-exec true: built, not run).
cross:
	@for os in darwin windows; do \
		echo "cross: GOOS=$$os"; \
		GOOS=$$os $(GO) vet ./... || exit 1; \
		GOOS=$$os $(GO) test -count=1 -run '^$$' -exec true ./... >/dev/null || exit 1; \
		for m in $(SUBMODULES); do (cd $$m && GOOS=$$os $(GO) vet ./...) || exit 1; done; \
	done

## staticcheck: both modules, at the pinned version.
staticcheck:
	$(GO) run $(STATICCHECK) ./...
	@for m in $(SUBMODULES); do echo "staticcheck: $$m"; (cd $$m && $(GO) run $(STATICCHECK) ./...) || exit 1; done

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt: not formatted:" $$out >&2; exit 1; fi

# unit: every test on the system's redis-server 7.0, the oldest supported
# (with -race, so without the allocation tests, which then run alone);
# then the real-server tests of internal/pipe, redlock and the launchers
# (standalone, Cluster, Sentinel) on the newest Redis and the newest
# Valkey (SERVERS_NEWEST), those two passes side by side: each mostly
# waits (about 140-160 s of wall time each on the 2-core VM, 2026-11-30,
# redlock's slow tests running two at a time), so together they take
# about as long as one. In the first step the torture package's short
# passes (about 220 s) are the longest. Then the allocation and
# telemetry tests (unit-allocs, about 40 s) and the fuzz smoke (about
# 30 s) beside the bench module's tests (unit-bench, about 80 s), after
# the passes: beside the passes (make -j3) make test took 9m23s
# instead of 10m50s, but make test-stress then failed a redlock test on an
# Unlock that the CPU hogs and the bench smoke's processes slowed past
# MasterTimeout. The allocation tests give their masters a MasterTimeout
# of 1 s, and the telemetry tests' masters fail by being killed, not
# slowed. The other servers (valkey 8.0, valkey 8.1, redis 8.0) are left
# to make test-servers.
unit:
	VOLLEY_EXPECT_SERVER=redis VOLLEY_EXPECT_VERSION=$(call version,$(filter redis-%,$(SYSTEM_SERVERS))) $(GO) test -race -shuffle=on -count=1 -timeout 8m ./...
	@$(MAKE) --no-print-directory -j2 --output-sync=target $(addprefix pass-,$(call names,$(SERVERS_NEWEST)))
	@$(MAKE) --no-print-directory -j2 --output-sync=target unit-allocs unit-bench fuzz-smoke

# unit-allocs: the allocation tests, built without -race (its
# instrumentation allocates): the exact counts of alloc_test.go; then the
# telemetry adapters' tests.
unit-allocs:
	$(GO) test -count=1 -run 'Allocs' ./resp ./conn ./internal/pipe ./redlock
	cd redlockotel && $(GO) test -race -shuffle=on -count=1 ./...
	cd redlockprom && $(GO) test -race -shuffle=on -count=1 ./...

# unit-bench: the bench module's tests (lockbench's harness smoke).
unit-bench:
	cd bench && $(GO) test -count=1 -timeout 5m ./...

## test-stress: the unit suite of make test on a busy machine: STRESS_RUNS
## runs in a row with a CPU-bound hog on every core, then one with
## GOMAXPROCS=1; any failure fails the target. Run it before submitting
## any change that touches timing. The hogs are this recipe's children,
## killed when it ends (also on failure or interrupt).
test-stress: deps servers-newest
	@set -e; hogs=""; \
	trap 'for p in $$hogs; do kill $$p 2>/dev/null || true; done' EXIT INT TERM; \
	for c in $$(seq $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)); do \
		sh -c 'while :; do :; done' & hogs="$$hogs $$!"; \
	done; \
	for i in $$(seq $(STRESS_RUNS)); do \
		echo "test-stress: run $$i of $(STRESS_RUNS), a CPU hog on every core"; \
		$(MAKE) --no-print-directory unit; \
	done; \
	for p in $$hogs; do kill $$p 2>/dev/null || true; done; hogs=""; \
	echo "test-stress: GOMAXPROCS=1"; \
	GOMAXPROCS=1 $(MAKE) --no-print-directory unit; \
	echo "test-stress: passed $(STRESS_RUNS) loaded runs and one with GOMAXPROCS=1"

## fuzz-smoke: every fuzz target for SMOKE_FUZZTIME (1000 executions each).
fuzz-smoke:
	@for t in $$($(GO) test -list '^Fuzz' ./fuzz | grep '^Fuzz'); do \
		echo "fuzz-smoke: $$t ($(SMOKE_FUZZTIME))"; \
		$(GO) test ./fuzz -run='^$$' -fuzz="^$$t\$$" -fuzztime=$(SMOKE_FUZZTIME) || exit 1; \
	done

## fuzz: every fuzz target for FUZZTIME each (default 60s).
fuzz:
	@for t in $$($(GO) test -list '^Fuzz' ./fuzz | grep '^Fuzz'); do \
		echo "fuzz: $$t ($(FUZZTIME))"; \
		$(GO) test ./fuzz -run='^$$' -fuzz="^$$t\$$" -fuzztime=$(FUZZTIME) || exit 1; \
	done

## bench: the main job: lockbench's quick pass on five local masters
## (real redis-server, or embedded fake masters without it), Volley against
## redsync and peers, interleaved; table on stdout, JSON and the figure (SVG
## and PNG) in bench/results. Its fleet mode (many processes, one lock)
## runs at 16 and 64 processes of one goroutine, no hold, one 3 s window
## per contender (-quick's settings for that mode).
bench: deps
	cd bench && $(GO) run ./cmd/lockbench -quick -json results/lockbench-quick.json -plot results/lockbench-quick

## bench-go: the Go benchmarks: library packages, then codec and connection
## against peers (bench module), BENCH_COUNT times each (benchstat wants
## about 10 for its confidence intervals); BENCH_GO_PATTERN narrows them (a
## -bench regexp: make bench-go BENCH_COUNT=3 BENCH_GO_PATTERN=Parse). The
## raw output goes to BENCH_GO_OUT, then benchstat summarises it.
BENCH_COUNT      ?= 10
BENCH_GO_PATTERN ?= .
BENCH_GO_OUT     ?= bench/results/bench-go.txt
# benchstat, pinned: run from the module proxy at this version, as staticcheck.
BENCHSTAT        ?= golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
bench-go:
	@mkdir -p $(dir $(abspath $(BENCH_GO_OUT))) && : > $(abspath $(BENCH_GO_OUT))
	$(GO) test -run='^$$' -bench='$(BENCH_GO_PATTERN)' -benchmem -count=$(BENCH_COUNT) ./resp/ ./internal/pipe/ ./redlock/ 2>&1 | tee -a $(abspath $(BENCH_GO_OUT))
	cd bench && $(GO) test -run='^$$' -bench='$(BENCH_GO_PATTERN)' -benchmem -count=$(BENCH_COUNT) . 2>&1 | tee -a $(abspath $(BENCH_GO_OUT))
	@# tee hides go test's exit status: a failure shows as a FAIL line.
	@if grep -q '^\(--- \)\{0,1\}FAIL' $(abspath $(BENCH_GO_OUT)); then echo "bench-go: failed, see $(BENCH_GO_OUT)" >&2; exit 1; fi
	@echo "bench-go: raw output in $(BENCH_GO_OUT)"
	$(GO) run $(BENCHSTAT) $(BENCH_GO_OUT)

## bench-go-compare: benchstat's A/B of two bench-go outputs, OLD against
## NEW (default: the last bench-go), e.g. a run saved before a change:
##   make bench-go BENCH_GO_OUT=/tmp/old.txt; (change); make bench-go
##   make bench-go-compare OLD=/tmp/old.txt
NEW ?= $(BENCH_GO_OUT)
bench-go-compare:
	@if [ -z "$(OLD)" ]; then echo "usage: make bench-go-compare OLD=old.txt [NEW=new.txt]" >&2; exit 2; fi
	$(GO) run $(BENCHSTAT) old=$(OLD) new=$(NEW)

## torture: redlock under rotating faults on five local masters behind fault
## proxies; exits non-zero on any violation, panic or stuck operation.
torture: deps
	$(GO) run ./redlock/internal/cmd/torture -duration $(TORTURE_TIME) $(if $(SEED),-seed $(SEED)) -json torture.json

## torture-cluster: the same over a local Redis Cluster of
## CLUSTER_PRIMARIES primaries (default 3; 6 shows the copies spread), a
## replica each, whose primaries fail over (one losing its last writes),
## die and lose slots; fenced, every token checked against the last.
CLUSTER_PRIMARIES ?= 3
torture-cluster: deps
	$(GO) run ./redlock/internal/cmd/torture -cluster -masters $(CLUSTER_PRIMARIES) -keys 4 -duration $(TORTURE_TIME) $(if $(SEED),-seed $(SEED)) -json torture-cluster.json

## torture-semaphore: the same with every key a semaphore of 2 permits,
## checked for a third holder at any moment and, fenced, for each
## permit's tokens.
torture-semaphore: deps
	$(GO) run ./redlock/internal/cmd/torture -permits 2 -duration $(TORTURE_TIME) $(if $(SEED),-seed $(SEED)) -json torture-semaphore.json

## torture-rw: the same with every key a read-write lock, half the
## rounds readers, checked for a reader beside a writer and, fenced, for
## the writers' tokens.
torture-rw: deps
	$(GO) run ./redlock/internal/cmd/torture -read-share 0.5 -duration $(TORTURE_TIME) $(if $(SEED),-seed $(SEED)) -json torture-rw.json

## torture-election: the same schedule over one election: 8 candidates,
## each with a client of its own, lead, resign or crash; it fails on two
## leaders at once, a term not greater than the one before, a leader
## acting past its lease, or a takeover slower than its bound outside
## faults.
torture-election: deps
	$(GO) run ./redlock/internal/cmd/torture -election -duration $(TORTURE_TIME) $(if $(SEED),-seed $(SEED)) -json torture-election.json

## torture-rotation: minority partitions only, so that renewals meet
## several faults that rotate among minorities: one election, half of the
## leaderships held for up to 30 TTLs; then locks, half of the rounds
## Do calls holding for up to 30 TTLs (4 clients x 2 goroutines, 3 keys).
## Each report counts the leaderships or Do holds lost (with restored
## copies: none while a quorum is up); TORTURE_TIME each.
## `-break-renewals` on the second shows that the count can fail.
torture-rotation: deps
	$(GO) run ./redlock/internal/cmd/torture -election -faults minority-partition -long-leads 0.5 -lead-ttls 30 -unsafe-duration 0 -duration $(TORTURE_TIME) $(if $(SEED),-seed $(SEED)) -json torture-rotation.json
	$(GO) run ./redlock/internal/cmd/torture -do-share 0.5 -do-ttls 30 -clients 4 -goroutines 2 -faults minority-partition -unsafe-duration 0 -duration $(TORTURE_TIME) $(if $(SEED),-seed $(SEED)) -json torture-rotation-do.json

## failover-loop: single Locks (default Config, one goroutine per key, no
## key contended) while primaries fail over one at a time: over a local
## Redis Cluster of 3 primaries (4 SIGKILLs, each primary restarted) and
## over 3 Sentinel groups (2 SIGKILLs, 2 SENTINEL FAILOVERs); fails when a
## Lock failed, or a Lock or a key's wait for a grant outlasted the
## longest takeover plus 1 s (cluster) or 2 s (Sentinel). About 8
## minutes: faults are spaced by MaxTTL + FailoverGrace, the longest a
## moved master is held out. `go run ./redlock/internal/cmd/faultloop
## -settle 3s` overlaps them and shows the check can fail.
failover-loop: deps
	$(GO) run ./redlock/internal/cmd/faultloop -faults 4
	$(GO) run ./redlock/internal/cmd/faultloop -sentinel -faults 4

## soak-do: Do calls (default Config, TTL 10s, holds up to 30s, so renewals
## run) on five local masters for SOAK_TIME (default 10m) while 2 busy
## goroutines per CPU keep the machine loaded; fails on a lost Do lock or
## two holders at once. `go run ./redlock/internal/cmd/soak
## -break-renewals -duration 1m` shows the count can fail.
SOAK_TIME ?= 10m
soak-do: deps
	$(GO) run ./redlock/internal/cmd/soak -duration $(SOAK_TIME)

## cover: tests with a coverage profile and a per-function summary.
cover: deps
	$(GO) test -count=1 -coverprofile=cover.out ./...
	$(GO) tool cover -func=cover.out | tail -n 1

## lint: vet, cross-vet, staticcheck and formatting, without the tests.
lint: vet cross staticcheck fmt-check

## redis-up: five local masters for manual use, on REDIS_PORTS.
redis-up: deps
	@mkdir -p $(REDIS_DIR)
	@for p in $(REDIS_PORTS); do \
		redis-server --port $$p --bind 127.0.0.1 --save '' --appendonly no \
			--daemonize yes --dir "$(CURDIR)/$(REDIS_DIR)" \
			--pidfile "$(CURDIR)/$(REDIS_DIR)/$$p.pid" --logfile "$(CURDIR)/$(REDIS_DIR)/$$p.log" \
			|| exit 1; \
		echo "redis-up: master on 127.0.0.1:$$p"; \
	done

## cluster-up: a local Redis Cluster for manual use: CLUSTER_UP_PORTS,
## three primaries and a replica each (redis-cli --cluster create), fresh
## each time, in $(REDIS_DIR)/cluster; use it as
## redis-cluster://127.0.0.1:7011.
## cluster-down stops exactly those servers.
cluster-up: deps
	@d="$(CURDIR)/$(REDIS_DIR)/cluster"; mkdir -p "$$d"; addrs=""; \
	for p in $(CLUSTER_UP_PORTS); do \
		rm -rf "$$d/$$p" && mkdir -p "$$d/$$p" && \
		redis-server --port $$p --bind 127.0.0.1 --save '' --appendonly no \
			--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
			--daemonize yes --dir "$$d/$$p" --pidfile "$$d/$$p.pid" --logfile "$$d/$$p.log" || exit 1; \
		addrs="$$addrs 127.0.0.1:$$p"; \
	done; \
	for p in $(CLUSTER_UP_PORTS); do \
		for i in $$(seq 50); do redis-cli -p $$p ping >/dev/null 2>&1 && break; sleep 0.1; done; \
	done; \
	redis-cli --cluster create $$addrs --cluster-replicas 1 --cluster-yes >"$$d/create.log" 2>&1 || { cat "$$d/create.log"; exit 1; }; \
	for i in $$(seq 100); do \
		redis-cli -p $(firstword $(CLUSTER_UP_PORTS)) cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break; sleep 0.1; \
	done; \
	redis-cli -p $(firstword $(CLUSTER_UP_PORTS)) cluster info | grep -q 'cluster_state:ok' || { echo "cluster-up: the cluster did not come up"; exit 1; }; \
	echo "cluster-up: redis-cluster://127.0.0.1:$(firstword $(CLUSTER_UP_PORTS)) ($(words $(CLUSTER_UP_PORTS)) nodes, 3 primaries)"

cluster-down:
	@$(MAKE) --no-print-directory stop-pids PIDDIR="$(REDIS_DIR)/cluster"

## sentinel-up: a local Sentinel group for manual use: a primary and two
## replicas on SENTINEL_UP_PORTS, three Sentinels on SENTINEL_PORTS that
## monitor it as "mymaster" (quorum 2), in $(REDIS_DIR)/sentinel; use it
## as redis-sentinel://127.0.0.1:7031,127.0.0.1:7032,127.0.0.1:7033/mymaster.
## sentinel-down stops exactly those.
sentinel-up: deps
	@d="$(CURDIR)/$(REDIS_DIR)/sentinel"; mkdir -p "$$d"; primary=$(firstword $(SENTINEL_UP_PORTS)); \
	for p in $(SENTINEL_UP_PORTS); do \
		extra=""; [ $$p = $$primary ] || extra="--replicaof 127.0.0.1 $$primary"; \
		redis-server --port $$p --bind 127.0.0.1 --save '' --appendonly no $$extra \
			--daemonize yes --dir "$$d" --pidfile "$$d/$$p.pid" --logfile "$$d/$$p.log" || exit 1; \
	done; \
	for p in $(SENTINEL_PORTS); do \
		printf 'port %s\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 %s 2\nsentinel down-after-milliseconds mymaster 2000\nsentinel failover-timeout mymaster 10000\n' $$p $$primary >"$$d/sentinel-$$p.conf"; \
		redis-server "$$d/sentinel-$$p.conf" --sentinel --daemonize yes --dir "$$d" \
			--pidfile "$$d/$$p.pid" --logfile "$$d/$$p.log" || exit 1; \
	done; \
	for i in $$(seq 100); do \
		redis-cli -p $(firstword $(SENTINEL_PORTS)) sentinel get-master-addr-by-name mymaster 2>/dev/null | grep -q $$primary && break; sleep 0.1; \
	done; \
	echo "sentinel-up: redis-sentinel://$$(echo $(SENTINEL_PORTS) | sed 's/\([0-9]*\)/127.0.0.1:\1/g; s/ /,/g')/mymaster"

sentinel-down:
	@$(MAKE) --no-print-directory stop-pids PIDDIR="$(REDIS_DIR)/sentinel"

# stop-pids: stop the processes whose pid files are in PIDDIR, and wait.
stop-pids:
	@for f in $(PIDDIR)/*.pid; do \
		[ -f "$$f" ] || continue; \
		pid=$$(cat "$$f"); rm -f "$$f"; \
		kill "$$pid" 2>/dev/null || continue; \
		for i in $$(seq 50); do kill -0 "$$pid" 2>/dev/null || break; sleep 0.1; done; \
		echo "stopped pid $$pid"; \
	done

## redis-down: stop exactly the masters redis-up started, and wait for them.
redis-down:
	@$(MAKE) --no-print-directory stop-pids PIDDIR="$(REDIS_DIR)"
