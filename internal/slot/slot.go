// Package slot computes Redis Cluster hash slots: CRC16 (XMODEM) of a key,
// or of its hash tag, modulo 16384, as the Redis Cluster specification
// defines them.
package slot

// Count is the number of hash slots of a Redis Cluster.
const Count = 16384

// Of returns key's hash slot. When key has a hash tag (the bytes between
// its first '{' and the first '}' after it, if they are not empty), only
// the tag is hashed, so keys that share a tag share a slot.
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

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), bit by bit:
// slots are computed at setup, never per request.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
