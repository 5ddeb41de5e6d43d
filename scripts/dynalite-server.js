// dynalite-server.js starts dynalite on 127.0.0.1 with instant table
// operations, surviving clients that abort requests (see survive-aborts.js).
// Usage: node scripts/dynalite-server.js PORT
'use strict'
require('./survive-aborts')('dynalite')
const port = Number(process.argv[2])
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: dynalite-server.js PORT')
  process.exit(2)
}
const server = require('dynalite')({
  createTableMs: 0,
  deleteTableMs: 0,
  updateTableMs: 0,
})
server.on('error', (err) => {
  console.error('dynalite: ' + err.message)
  process.exit(1)
})
server.listen(port, '127.0.0.1', () => {
  console.log('dynalite listening at http://127.0.0.1:' + port)
})
process.on('SIGTERM', () => process.exit(0))
