package store

import "github.com/prom-hbase/prom-hbase/table"

// tableCells adapts a row's table cells to cellcodec.Cells, which the cell
// codec takes so as not to know the table interface.
type tableCells []table.Cell

func (c tableCells) Len() int { return len(c) }

func (c tableCells) Cell(i int) (qualifier, value []byte) { return c[i].Qualifier, c[i].Value }
