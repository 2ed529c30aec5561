package resp

// Encoders of the RESP types that no caller of the package needs to
// write; the decoder's tests build their input with them.

// appendSetHeader appends "~<n>\r\n", the header of a RESP3 set.
func appendSetHeader(dst []byte, n int) []byte {
	return appendHeader(dst, TypeSet, int64(max(n, 0)))
}

// appendAttributeHeader appends "|<pairs>\r\n", the header of a RESP3
// attribute of pairs key/value pairs; the annotated value follows them.
func appendAttributeHeader(dst []byte, pairs int) []byte {
	return appendHeader(dst, TypeAttribute, int64(max(pairs, 0)))
}

// appendBigNumber appends the RESP3 big number "(<digits>\r\n"; digits is
// an optional sign followed by decimal digits.
func appendBigNumber(dst []byte, digits string) []byte {
	return appendLine(dst, TypeBigNumber, digits)
}

// appendBulkError appends the RESP3 bulk error "!<len>\r\n<msg>\r\n".
func appendBulkError(dst []byte, msg string) []byte {
	dst = appendHeader(dst, TypeBulkError, int64(len(msg)))
	dst = append(dst, msg...)
	return append(dst, '\r', '\n')
}

// appendSimpleString appends "+<s>\r\n".
func appendSimpleString(dst []byte, s string) []byte {
	return appendLine(dst, TypeSimpleString, s)
}
