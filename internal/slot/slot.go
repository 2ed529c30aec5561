// Package slot computes Redis Cluster hash slots: CRC16 (XMODEM) of a key,
// or of its hash tag, modulo 16384, as the Redis Cluster specification
// defines them.
package slot

import "sync"

// Count is the number of hash slots of a Redis Cluster.
const Count = 16384

// Of returns key's hash slot. When key has a hash tag (the bytes between
// its first '{' and the first '}' after it, if they are not empty), only
// the tag is hashed, so keys that share a tag share a slot. It does not
// allocate.
func Of(key string) int {
	if open := indexByte(key, '{'); open >= 0 {
		if n := indexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return int(crc16(key) % Count)
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), a byte at a
// time from crcTable: Of runs on every lock of a cluster Client.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^s[i]]
	}
	return crc
}

// crcTable is, per byte b, the CRC of b alone: the bit-by-bit division
// of b<<8 by the polynomial.
var crcTable = func() (t [256]uint16) {
	for b := range t {
		crc := uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[b] = crc
	}
	return t
}()

// TagLen is the length of every Tag.
const TagLen = len("{vs000000}")

// Tag returns a hash tag whose slot is s: "{vs" + six digits + "}", the
// first such tag (counting up from 000000) in slot s. Every slot has one,
// all of length TagLen, so that a key behind one slot's tag becomes
// another's by overwriting the tag's bytes. The table is made at the first
// call (about 150,000 CRCs) and shared; Tag does not allocate after that.
func Tag(s int) string { return tags()[s] }

var tags = sync.OnceValue(func() *[Count]string {
	var t [Count]string
	b := []byte("{vs000000}")
	left := Count
	for k := 0; left > 0; k++ {
		if k == 1000000 {
			panic("slot: a slot without a tag") // unreachable: the test checks the table
		}
		for i, n := 8, k; i >= 3; i, n = i-1, n/10 {
			b[i] = byte('0' + n%10)
		}
		if s := crc16(string(b[1:9])) % Count; t[s] == "" {
			t[s] = string(b)
			left--
		}
	}
	return &t
})
