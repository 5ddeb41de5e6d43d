// survive-aborts.js keeps a local server alive when a client aborts a
// request mid-way. dynalite and kinesalite both handle request errors with
// `req.on('error', err => { throw err })`, so a killed worker or a call cut
// by its deadline (ECONNRESET, "aborted") would crash the server for every
// other client. Such errors are logged and ignored; any other uncaught error
// still ends the process.
'use strict'
module.exports = function surviveAborts (name) {
  process.on('uncaughtException', (err) => {
    const code = err && err.code
    const msg = (err && err.message) || String(err)
    if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED' || msg === 'aborted' || code === 'ERR_STREAM_PREMATURE_CLOSE') {
      console.error(name + ': client aborted a request (' + (code || msg) + '); ignored')
      return
    }
    console.error(name + ': uncaught error: ' + (err && err.stack ? err.stack : msg))
    process.exit(1)
  })
}
