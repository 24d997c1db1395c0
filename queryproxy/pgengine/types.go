package pgengine

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// columnType is the result Type of a column of the PostgreSQL type oid (a domain's base
// type; see the package documentation for the table).
func columnType(oid uint32) sqlgen.Type {
	switch oid {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.QCharOID:
		return sqlgen.String
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		return sqlgen.Integer
	case pgtype.NumericOID, pgtype.Float4OID, pgtype.Float8OID:
		return sqlgen.Decimal
	case pgtype.BoolOID:
		return sqlgen.Boolean
	case pgtype.TimestampOID, pgtype.TimestamptzOID, pgtype.DateOID, pgtype.TimeOID, pgtype.TimetzOID:
		return sqlgen.DateTime
	case pgtype.ByteaOID:
		return sqlgen.Binary
	}
	return sqlgen.String
}

// columnNumeric is what numbers a column of the PostgreSQL type oid holds, with its type
// modifier mod (numeric's precision and scale; -1 for none).
func columnNumeric(oid uint32, mod int32) sqlgen.Numeric {
	switch oid {
	case pgtype.Int2OID:
		return sqlgen.NumInt16
	case pgtype.Int4OID:
		return sqlgen.NumInt32
	case pgtype.Int8OID:
		return sqlgen.NumInt64
	case pgtype.Float4OID:
		return sqlgen.NumFloat32
	case pgtype.Float8OID:
		return sqlgen.NumFloat64
	case pgtype.NumericOID:
		if mod < 4 {
			return sqlgen.NumDecimalOf(0, 0)
		}
		// ((precision << 16) | (scale & 0x7ff)) + 4, the scale an 11-bit signed
		// number (PostgreSQL 15 allows one below 0 or above the precision).
		m := mod - 4
		precision, scale := int(m>>16&0xffff), int(m&0x7ff)
		if scale&0x400 != 0 {
			scale -= 0x800
		}
		return sqlgen.NumDecimalOf(precision, scale)
	}
	return sqlgen.Numeric{}
}

// textKind is how sqlgen compares a column of the PostgreSQL type oid that columnType
// reports as String: a text type as itself, uuid as itself but for patterns, inet as
// abbrev's text, any other type as its text (sqlgen.Text).
func textKind(oid uint32) sqlgen.Text {
	switch oid {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID:
		return sqlgen.TextType
	case pgtype.UUIDOID:
		return sqlgen.TextUUID
	case pgtype.InetOID:
		return sqlgen.TextInet
	}
	// name among them: a value compared with a name column would be read as a name,
	// cut to 63 bytes.
	return sqlgen.TextCast
}

// resultFormats asks the server for the binary format of the types whose binary form pgx
// decodes exactly and cheaply; every type not listed comes in the text format, as
// PostgreSQL prints it: numeric with all its digits ("37.4800"), float4 as the shortest
// decimal that reads back as the same float4, time, and every type the engine reports as
// String (uuid, json, arrays, enums, intervals...).
var resultFormats = pgx.QueryResultFormatsByOID{
	pgtype.Int2OID:        pgx.BinaryFormatCode,
	pgtype.Int4OID:        pgx.BinaryFormatCode,
	pgtype.Int8OID:        pgx.BinaryFormatCode,
	pgtype.Float8OID:      pgx.BinaryFormatCode,
	pgtype.BoolOID:        pgx.BinaryFormatCode,
	pgtype.TimestampOID:   pgx.BinaryFormatCode,
	pgtype.TimestamptzOID: pgx.BinaryFormatCode,
	pgtype.DateOID:        pgx.BinaryFormatCode,
	pgtype.ByteaOID:       pgx.BinaryFormatCode,
}

// bindArgs converts the arguments of a statement to what pgx binds: an engine.Decimal
// as its text (sqlgen casts a number's placeholder to numeric, and PostgreSQL converts
// text for a numeric column exactly). Other values (string, int64, bool, nil, time.Time)
// are bound as they are. The caller's slice is not changed.
func bindArgs(args []any) []any {
	out, copied := args, false
	for i, a := range args {
		d, ok := a.(engine.Decimal)
		if !ok {
			continue
		}
		if !copied {
			out, copied = append([]any(nil), args...), true
		}
		out[i] = string(d)
	}
	return out
}
