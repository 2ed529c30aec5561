package fakeredis

import (
	"testing"

	"github.com/volleylock/volley/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
