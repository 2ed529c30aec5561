package fakeredis

// The election's scripts (scripts.ElectAnnounce, ElectRelease) once
// KEYS[1] was found to hold the token ARGV[1] (see runTokenScript);
// ElectExtendBatch is extendBatchLocked's.

// announcedPayload is what scripts.ElectAnnounce publishes on the
// leader's key's release channel.
const announcedPayload = "leader-announced"

// electAnnounceAct sets the record, KEYS[2], to ARGV[2] with KEYS[1]'s
// PTTL, and publishes the announcement.
func electAnnounceAct(c *client, sha string, keys, argv [][]byte, now int64) {
	key := keys[0]
	if len(keys) < 2 || len(argv) < 2 {
		c.out = appendScriptError(c.out, errScriptArgs, sha)
		return
	}
	pttl := c.s.scriptPttlLocked(c.db, key, now)
	if pttl <= 0 {
		c.out = append(c.out, replyZero...)
		return
	}
	c.s.dbs[c.db][string(keys[1])] = entry{val: string(argv[1]), exp: now + pttl}
	channel := append([]byte(releasedChannelPrefix), key...)
	c.s.publishLocked(c, shard, channel, []byte(announcedPayload))
	c.out = append(c.out, replyOne...)
}

// electReleaseAct deletes KEYS[1] and the record, KEYS[2]; with ARGV[2]
// "1", it publishes the release.
func electReleaseAct(c *client, sha string, keys, argv [][]byte, _ int64) {
	key := keys[0]
	if len(keys) < 2 {
		c.out = appendScriptError(c.out, errScriptArgs, sha)
		return
	}
	delete(c.s.dbs[c.db], string(key))
	delete(c.s.dbs[c.db], string(keys[1]))
	if len(argv) > 1 && string(argv[1]) == "1" {
		c.publishReleaseLocked(key, argv[0], "")
	}
	c.out = append(c.out, replyOne...)
}
