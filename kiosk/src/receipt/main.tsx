import { render } from 'solid-js/web'
import { ReceiptApp } from './Receipt'
import '../staff/staff.css'
import './receipt.css'

render(() => <ReceiptApp />, document.getElementById('root')!)
