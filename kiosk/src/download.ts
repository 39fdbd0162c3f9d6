/**
 * Hands a file already in memory to the browser's downloads under `name`, shared by the manager app and the
 * statement page. The object URL lives long enough for the download to start, then is let go.
 */
export function saveFile(name: string, content: Blob) {
  const url = URL.createObjectURL(content)
  const a = document.createElement('a')
  a.href = url
  a.download = name
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}
