package redistest

import (
	"os"
	"strings"
	"testing"
)

// Identity reads which server answered from its INFO server reply: kind
// "valkey" and valkey_version when server_name is valkey (Valkey's
// redis_version stays 7.2.4 whatever its version), else kind "redis" and
// redis_version (Redis 8 reports no server_name).
func Identity(info string) (kind, version string) {
	if infoField(info, "server_name") == "valkey" {
		return "valkey", infoField(info, "valkey_version")
	}
	return "redis", infoField(info, "redis_version")
}

// ExpectIdentity fails tb, never skips, unless kind and version are the
// ones the environment names: VOLLEY_EXPECT_SERVER the kind ("redis" or
// "valkey"), VOLLEY_EXPECT_VERSION the version or a prefix of it at a
// dot ("8.6" matches 8.6.3, not 8.60.0). Unset, neither is checked. make
// test sets both for each of its passes, so that a pass meant for one
// server cannot quietly test another.
func ExpectIdentity(tb testing.TB, kind, version string) {
	tb.Helper()
	if want := os.Getenv("VOLLEY_EXPECT_SERVER"); want != "" && want != kind {
		tb.Fatalf("redistest: the tests ran against %s %s, not %s", kind, version, want)
	}
	if want := os.Getenv("VOLLEY_EXPECT_VERSION"); want != "" && !versionIs(version, want) {
		tb.Fatalf("redistest: the tests ran against %s %s, not %s", kind, version, want)
	}
}

// versionIs reports whether version is want or starts with want and a dot.
func versionIs(version, want string) bool {
	rest, ok := strings.CutPrefix(version, want)
	return ok && (rest == "" || rest[0] == '.')
}
