/** A call as the public snapshot shows it; `name` is already masked by the server and may be null. */
export interface Call {
  ticket: string
  name: string | null
  desk: string
  service: string
  calledAt: string
}

export interface Rate {
  currency: string
  buy: number
  sell: number
  mid: number
}

export interface ServiceQueue {
  id: number
  name: string
  prefix: string
  waiting: number
}

/** `GET /api/public/ventanilla/{token}` and every `snapshot` event of its stream. */
export interface Snapshot {
  companyName: string
  date: string
  rates: Rate[]
  services: ServiceQueue[]
  currentCall: Call | null
  recentCalls: Call[]
  logoUrl: string
  showLogo: boolean
  timezone: string
  tickerText: string
  announceSound: boolean
  announceTts: boolean
  privacyMode: 'full_name' | 'first_last_initial' | 'ticket'
  updatedAt: string
}
