package redlock

// SetUncheckedNativeRelease turns the broken native release (see
// uncheckedNativeRelease) on or off, for the external tests.
func SetUncheckedNativeRelease(on bool) { uncheckedNativeRelease = on }

// NativeReleaseOn reports whether every master of c gets a native release.
func NativeReleaseOn(c *Client) bool {
	for _, m := range c.masters {
		if _, ok := c.nativeFor(&cmdRelease, m.conn()); !ok {
			return false
		}
	}
	return true
}
